import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { applyEnv } from '../../infra/config';
import type { Endpoints } from '../../infra/base/endpoints';
import { projectRoot } from '../support/paths';
import { ensureTerminatorBinary, TERMINATOR_BIN } from '../../gateways/submit/quic/terminator-build';
import { StreamClient } from '../support/stream-client';
import { waitFor } from '../support/wait';
import { ephemeralListenEnv, type Json } from '../support/ephemeral-env';

// The README's first command, as a newcomer runs it: a fresh `git clone` (of this checkout's HEAD: commit before
// running), then `npm start`, which builds and runs the local config. The test reads the default endpoints file
// and a subscriber on a demo account must hold a transaction within 10 seconds.
//
// Two departures from the newcomer, both forced by the test machine: node_modules is a symlink to this checkout's
// install instead of `npm install` (that needs the registry over the network; the tests run offline), and every
// listener of the local config is moved to an ephemeral port through MERIDIAN__… overrides so parallel runs never
// collide. The overrides are derived from the clone's own local.json: every HOST:PORT value in it is a listener
// (targets are URLs), so a surface that adds one is covered without touching this file.

describe('fresh clone: `npm start`, then a subscriber gets a demo transaction', function () {
  this.timeout(300_000);
  let dir: string | undefined;
  let child: ReturnType<typeof spawn> | undefined;

  after(async () => {
    if (child !== undefined && child.exitCode === null && child.signalCode === null) {
      process.kill(-child.pid!, 'SIGKILL');
      await new Promise((r) => child!.once('exit', r));
    }
    if (dir !== undefined) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('moves every HOST:PORT of a config to port 0 through environment names the config loader maps back', () => {
    const raw = {
      metrics: { listen: '127.0.0.1:9464' },
      gateways: { rpc: { listen: '127.0.0.1:8899', wsListen: '127.0.0.1:8900' }, evm: { chains: { '56': { http: '127.0.0.56:8545' } } }, submit: { forwardUrls: ['http://127.0.0.1:18899'] } },
    };
    const env = ephemeralListenEnv(raw);
    assert.deepEqual(Object.keys(env).sort(), ['MERIDIAN__GATEWAYS__EVM__CHAINS__56__HTTP', 'MERIDIAN__GATEWAYS__RPC__LISTEN', 'MERIDIAN__GATEWAYS__RPC__WS_LISTEN', 'MERIDIAN__METRICS__LISTEN']);
    assert.deepEqual(applyEnv(raw, env), {
      metrics: { listen: '127.0.0.1:0' },
      gateways: { rpc: { listen: '127.0.0.1:0', wsListen: '127.0.0.1:0' }, evm: { chains: { '56': { http: '127.0.0.56:0' } } }, submit: { forwardUrls: ['http://127.0.0.1:18899'] } },
    });
  });

  it('writes .meridian/endpoints.json, prints the addresses, streams within 10 s, and stops on Ctrl-C', async function () {
    this.timeout(1_200_000); // a first run compiles the QUIC terminator
    const root = projectRoot();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'meridian-clone-'));
    const clone = path.join(dir, 'meridian');
    execFileSync('git', ['clone', '--quiet', root, clone], { stdio: 'pipe' });
    fs.symlinkSync(path.join(root, 'node_modules'), path.join(clone, 'node_modules'));

    const local = JSON.parse(fs.readFileSync(path.join(clone, 'infra', 'config', 'local.json'), 'utf8')) as Json;
    const overrides = ephemeralListenEnv(local);
    assert.ok(Object.keys(overrides).length >= 4, JSON.stringify(overrides)); // chain, ingest, stream, metrics at least

    // The QUIC terminator is Rust that `npm start` builds with cargo on first use (minutes). Cargo targets live
    // outside the work tree (~/.cache/meridian, or $MERIDIAN_CACHE, which the clone inherits), so the clone finds
    // the one built first here and the test measures the start, not a compile.
    await ensureTerminatorBinary(TERMINATOR_BIN, (line) => process.stdout.write(`      ${line}\n`));

    let out = '';
    // detached: its own process group, so the test can send Ctrl-C's SIGINT to npm and node together.
    child = spawn('npm', ['start'], { cwd: clone, env: { ...process.env, ...overrides }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => child!.once('exit', (code, signal) => r({ code, signal })));
    // npm runs node in the same process group with the same pipes: both closed = every process of the run ended.
    const pipesClosed = Promise.all([child.stdout!, child.stderr!].map((s) => new Promise((r) => s.once('close', r))));

    const file = path.join(clone, '.meridian', 'endpoints.json');
    await waitFor(() => {
      if (child!.exitCode !== null) throw new Error(`npm start exited (${child!.exitCode})`);
      return fs.existsSync(file);
    }, 240_000, file, 200).catch((err: Error) => {
      throw new Error(`${err.message}:\n${out}`);
    });
    const e = JSON.parse(fs.readFileSync(file, 'utf8')) as Endpoints;
    const accounts = e.demo?.accounts ?? [];
    assert.ok(accounts.length > 0, JSON.stringify(e));
    assert.match(e.stream ?? '', /^127\.0\.0\.1:\d+$/);

    const sub = StreamClient.open(e.stream!);
    try {
      sub.send({ transactions: { demo: { accountInclude: [accounts[0]!] } } });
      const r = await sub.waitFor((x) => x.transaction !== undefined, 10_000);
      // The local config lets v1 filters match loaded addresses (fanout.lookupTables.matchV1): a demo transfer may name
      // the account only through the demo table.
      const t = r.transaction!;
      assert.ok(t.accountKeys.includes(accounts[0]!) || (e.demo?.lookupTable !== undefined && t.addressTableLookups.some((l) => l.accountKey === e.demo!.lookupTable)), JSON.stringify(t));
    } finally {
      await sub.close();
    }

    // The banner: every address as HOST:PORT, the endpoints file's path, a runnable hint; no URL.
    const banner = out.slice(out.indexOf('meridian is running'));
    assert.ok(banner.length > 0, out);
    for (const hp of [e.stream!, e.ingest!.replace('udp://', ''), new URL(e.chain!.http).host, new URL(e.metrics!).host]) assert.ok(banner.includes(hp), `${hp} in:\n${banner}`);
    assert.ok(banner.includes(path.join('.meridian', 'endpoints.json')), banner);
    assert.match(banner, new RegExp(`node dist/infra/cli\\.js subscribe --include ${accounts[0]} --url ${e.stream}`));
    assert.doesNotMatch(out, /https?:\/\/|wss?:\/\//);

    // Ctrl-C: npm itself dies of the SIGINT (as in a terminal); meridian stops its components and exits.
    process.kill(-child.pid!, 'SIGINT');
    const npm = await exited;
    assert.ok(npm.code === 0 || npm.signal === 'SIGINT', JSON.stringify(npm));
    await pipesClosed;
    assert.match(out, /"msg":"stopped"/, out);
    // Ctrl-C reaches the foreground group only: the children (own groups) are stopped by the service, and nothing
    // logs at error level (a terminator killed by the terminal used to be "restarted" with an error line).
    assert.doesNotMatch(out, /"level":50/, out);
    assert.equal(fs.existsSync(file), false, 'the endpoints file goes with the service');
  });
});

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Endpoints } from '../../infra/base/endpoints';
import { runCli, type CliResult } from '../ingest/support/child';
import { ephemeralListenEnv, type Json } from '../support/ephemeral-env';
import { cliCommand, projectRoot } from '../support/paths';
import { waitFor } from '../support/wait';

// Parts a machine cannot run: litesvm's native binding missing (any platform npm has no build of it for) and no
// Rust cargo (the QUIC terminator is built with it). Each must cost one clear line naming the component, the
// platform and the setting that runs without it, never a stack trace, and must not stop what does not need it
// (`start --help`; a start with the local chain off). The missing binding is simulated in the child with
// test/support/hide-modules (every litesvm-* platform package fails to resolve, so litesvm's own loader fails as
// it does on such a platform); the missing cargo with a PATH that has node but not cargo, and an empty build cache.

const STACK = /\n\s+at /;
const HIDE_LITESVM = { MERIDIAN_TEST_HIDE_MODULES: 'litesvm-*' };

/** NODE_OPTIONS that load the hide-modules hook (compiled, or through ts-node when the tests run from source). */
function hookOptions(): string {
  const hook = require.resolve('../support/hide-modules');
  return hook.endsWith('.ts') ? `-r ts-node/register/transpile-only -r ${hook}` : `--require ${hook}`;
}

/** The built-in local config's every listener on an ephemeral port, billing off (it would write into the project). */
function localEnv(): Record<string, string> {
  const local = JSON.parse(fs.readFileSync(path.join(projectRoot(), 'infra', 'config', 'local.json'), 'utf8')) as Json;
  return { ...ephemeralListenEnv(local), MERIDIAN__BILLING__ENABLED: 'false', MERIDIAN__LOG__FORMAT: 'json' };
}

function oneLine(r: CliResult, re: RegExp): void {
  assert.doesNotMatch(r.stderr, STACK, r.stderr);
  const lines = r.stderr.split('\n').filter((l) => l.trim().length > 0);
  assert.equal(lines.length, 1, r.stderr);
  assert.match(lines[0]!, re);
}

describe('start: a component this machine cannot run costs one line, not the service', function () {
  this.timeout(180_000);
  const platform = `${process.platform}/${process.arch}`.replace('/', '\\/');

  it('the simulation works: litesvm itself fails to load under the hook', async () => {
    const r = await runCli(['decode', '--help'], 60_000, { NODE_OPTIONS: hookOptions(), ...HIDE_LITESVM });
    assert.equal(r.code, 0, r.stderr); // the hook alone breaks nothing else
    const probe = spawn(process.execPath, ['-e', "try { require('litesvm'); console.log('loaded') } catch (e) { console.log(e.message.split('\\n')[0]) }"], { cwd: projectRoot(), env: { ...process.env, NODE_OPTIONS: hookOptions(), ...HIDE_LITESVM } });
    let out = '';
    probe.stdout.on('data', (b: Buffer) => (out += b.toString()));
    await new Promise((r) => probe.once('close', r));
    assert.match(out, /^Cannot find native binding/, out);
  });

  it('`meridian start --help` works without the native binding', async () => {
    const r = await runCli(['start', '--help'], 60_000, { NODE_OPTIONS: hookOptions(), ...HIDE_LITESVM });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /usage: meridian start/);
    assert.match(r.stdout, /MERIDIAN__LOCALCHAIN__ENABLED=false/);
  });

  it('a start that needs the local chain says in one line that it cannot run here and how to run without it (exit 1)', async () => {
    const r = await runCli(['start', '--endpoints', path.join(os.tmpdir(), `meridian-unavail-${process.pid}.json`)], 120_000, { ...localEnv(), NODE_OPTIONS: hookOptions(), ...HIDE_LITESVM });
    assert.equal(r.code, 1, r.stderr);
    oneLine(r, new RegExp(`^meridian start: localchain cannot run on this machine \\(${platform}\\): litesvm's native binding does not load \\(Cannot find native binding.*\\); to run without it, set MERIDIAN__LOCALCHAIN__ENABLED=false and MERIDIAN__DEMO__ENABLED=false .*gateways\\.rpc\\.upstreams and gateways\\.submit\\.forwardUrls at a real chain node`));
    assert.doesNotMatch(r.stdout, /"level":50/, 'no error-level log line beside the one line');
  });

  it('with the local chain off as the line says, the service starts without the binding and stops on SIGTERM', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'meridian-nochain-'));
    const file = path.join(dir, 'endpoints.json');
    const { cmd, args } = cliCommand();
    const env = {
      ...process.env, ...localEnv(), NODE_OPTIONS: hookOptions(), ...HIDE_LITESVM,
      MERIDIAN__LOCALCHAIN__ENABLED: 'false', MERIDIAN__DEMO__ENABLED: 'false',
      // "a real chain node": any URL does for starting (the gateways probe it and report it unhealthy).
      MERIDIAN__GATEWAYS__RPC__UPSTREAMS: '[{"http":"http://127.0.0.1:9","ws":"ws://127.0.0.1:9"}]',
      MERIDIAN__GATEWAYS__SUBMIT__FORWARD_URLS: '["http://127.0.0.1:9"]',
      MERIDIAN__GATEWAYS__SUBMIT__QUIC__ENABLED: 'false', MERIDIAN__GATEWAYS__EVM__ENABLED: 'false',
    };
    const child = spawn(cmd, [...args, 'start', '--endpoints', file], { cwd: projectRoot(), env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (out += b.toString()));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    try {
      await waitFor(() => {
        if (child.exitCode !== null) throw new Error(`start exited ${child.exitCode}:\n${out}`);
        return fs.existsSync(file);
      }, 120_000, 'endpoints file', 100);
      const e = JSON.parse(fs.readFileSync(file, 'utf8')) as Endpoints;
      assert.equal(e.chain, undefined);
      assert.ok(e.stream !== undefined && e.rpc !== undefined && e.submit?.http !== undefined, JSON.stringify(e));
      child.kill('SIGTERM');
      assert.equal(await exited, 0, out);
      assert.equal(fs.existsSync(file), false);
      assert.doesNotMatch(out, /native binding/);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('without cargo (and no terminator built yet) the QUIC transport says so in one line, naming its switch (exit 1)', async () => {
    const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'meridian-nocargo-'));
    try {
      // node's own folder only: it has no cargo (checked), so the PATH is one without Rust.
      const nodeDir = path.dirname(process.execPath);
      assert.equal(fs.existsSync(path.join(nodeDir, 'cargo')), false, `${nodeDir} holds a cargo`);
      const r = await runCli(['start', '--endpoints', path.join(cache, 'endpoints.json')], 120_000, {
        ...localEnv(), PATH: nodeDir, MERIDIAN_CACHE: cache, MERIDIAN__GATEWAYS__EVM__ENABLED: 'false',
      });
      assert.equal(r.code, 1, r.stderr);
      oneLine(r, new RegExp(`^meridian start: gateways\\.submit\\.quic cannot run on this machine \\(${platform}\\): the QUIC terminator is built with Rust's cargo .*not on PATH; to run without it, set MERIDIAN__GATEWAYS__SUBMIT__QUIC__ENABLED=false`));
      assert.doesNotMatch(r.stdout, /"level":50/, 'no error-level log line beside the one line');
    } finally {
      fs.rmSync(cache, { recursive: true, force: true });
    }
  });
});

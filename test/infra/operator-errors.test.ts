import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { KafkaJSConnectionError, KafkaJSNumberOfRetriesExceeded } from 'kafkajs';
import { brokerMasker, maskError } from '../../bus/broker-address';
import { KafkaBus } from '../../bus/kafka';
import type { Endpoints } from '../../infra/base/endpoints';
import { parseConfig, ConfigError } from '../../infra/config';
import { runCli, type CliResult } from '../ingest/support/child';
import { ephemeralListenEnv, type Json } from '../support/ephemeral-env';
import { kafkaBrokers } from '../support/kafka';
import { quietLog } from '../support/log-capture';
import { cliCommand, projectRoot } from '../support/paths';
import { waitFor } from '../support/wait';

// The first things an operator meets, each one line naming the setting and never a stack trace: a Kafka that does
// not answer (at start and in a CLI command), a rental that is invalid (said before anything connects), a component
// with nothing to serve from, a boolean that is not one; and what must not read as an error at all: topics that
// exist. Each case is a real child process or a real broker.

const STACK = /\n\s+at /;

/** A loopback port nothing listens on: bound, read and closed (the kernel does not hand it out again at once). */
async function deadPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

function lines(text: string): string[] {
  return text.split('\n').filter((l) => l.trim().length > 0);
}

function oneLine(r: CliResult, re: RegExp): void {
  assert.doesNotMatch(r.stderr, STACK, r.stderr);
  const ls = lines(r.stderr).filter((l) => !/^\(see "meridian .*--help"\)$/.test(l));
  assert.equal(ls.length, 1, r.stderr);
  assert.match(ls[0]!, re);
}

function tmpDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'meridian-operr-'));
}

/** The built-in local config's every listener on an ephemeral port, billing off (it would write into the project). */
function localEnv(): Record<string, string> {
  const local = JSON.parse(fs.readFileSync(path.join(projectRoot(), 'infra', 'config', 'local.json'), 'utf8')) as Json;
  return { ...ephemeralListenEnv(local), MERIDIAN__BILLING__ENABLED: 'false', MERIDIAN__LOG__FORMAT: 'json' };
}

describe('operator errors: one line naming the setting, no stack trace (child processes)', function () {
  this.timeout(120_000);

  it('start with Kafka unreachable: one line naming the broker and bus.brokers, no stack, no broker address in any log line (exit 1)', async () => {
    const port = await deadPort();
    const dir = tmpDir();
    try {
      const cfg = path.join(dir, 'config.json');
      fs.writeFileSync(cfg, JSON.stringify({ bus: { kind: 'kafka', brokers: [`127.0.0.1:${port}`] }, metrics: { listen: '127.0.0.1:0' }, admin: { enabled: false }, ingest: { listen: '127.0.0.1:0' }, fanout: { listen: '127.0.0.1:0' }, log: { format: 'json' } }));
      const r = await runCli(['start', '--config', cfg, '--endpoints', path.join(dir, 'endpoints.json')], 60_000);
      assert.equal(r.code, 1, r.stderr);
      oneLine(r, new RegExp(`^meridian start: cannot reach Kafka at 127\\.0\\.0\\.1:${port}: connection refused \\(ECONNREFUSED\\); check that a broker runs there and that bus\\.brokers \\(MERIDIAN__BUS__BROKERS, or KAFKA_BROKERS\\) names it$`));
      // The log (stdout) never names the broker, and nothing was masked into stack frames ("file.js:[broker]").
      assert.ok(!r.stdout.includes(`:${port}`), r.stdout);
      assert.doesNotMatch(r.stdout + r.stderr, /\[broker\]:\d/);
      assert.doesNotMatch(r.stdout, /"level":50/, 'no error-level log line beside the one line');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('rentals put with Kafka unreachable: one line naming the broker and --brokers (exit 1)', async () => {
    const port = await deadPort();
    const r = await runCli(['rentals', 'put', '--brokers', `127.0.0.1:${port}`, '--id', 'fleet-a', '--region', 'fra', '--ip', '192.0.2.7', '--rps', '10'], 60_000);
    assert.equal(r.code, 1, r.stderr);
    oneLine(r, new RegExp(`^meridian rentals: cannot reach Kafka at 127\\.0\\.0\\.1:${port}: connection refused \\(ECONNREFUSED\\); check that a broker runs there and that --brokers \\(or KAFKA_BROKERS\\) names it$`));
    assert.equal(r.stdout, '');
  });

  it('rentals put validates before it connects: an invalid rental is refused at once, the unreachable broker never tried (exit 2)', async () => {
    const port = await deadPort();
    const t0 = Date.now();
    const r = await runCli(['rentals', 'put', '--brokers', `127.0.0.1:${port}`, '--id', 'fleet-a', '--region', 'fra', '--ip', '192.0.2.300'], 60_000);
    const ms = Date.now() - t0;
    assert.equal(r.code, 2, r.stderr);
    assert.doesNotMatch(r.stderr, STACK, r.stderr);
    assert.match(r.stderr, /invalid rental "fleet-a":\n\s+ips\[0\]: "192\.0\.2\.300" is not an IPv4 or IPv6 address/);
    assert.doesNotMatch(r.stderr, /Kafka|ECONNREFUSED/);
    // kafkajs's connect retries take ~9 s against a dead port; a check made first answers in the time node starts.
    assert.ok(ms < 5_000, `answered after ${ms} ms`);
  });

  it('an enabled chain gateway with no upstream refuses the start in one line naming its settings (exit 2, nothing listens)', async () => {
    const dir = tmpDir();
    try {
      const cfg = path.join(dir, 'config.json');
      fs.writeFileSync(cfg, JSON.stringify({ metrics: { listen: '127.0.0.1:0' }, admin: { enabled: false }, ingest: { listen: '127.0.0.1:0' }, fanout: { listen: '127.0.0.1:0' }, gateways: { rpc: { enabled: true, listen: '127.0.0.1:0', wsListen: '127.0.0.1:0' } }, log: { format: 'json' } }));
      const r = await runCli(['start', '--config', cfg, '--endpoints', path.join(dir, 'endpoints.json')], 60_000);
      assert.equal(r.code, 2, r.stderr);
      oneLine(r, /^meridian start: cannot start: gateways\.rpc\.enabled \(the chain JSON-RPC gateway\) has no upstream: set gateways\.rpc\.upstreams, run the local chain \(localchain\.enabled\), or set MERIDIAN__GATEWAYS__RPC__ENABLED=false$/);
      assert.equal(r.stdout, '', 'refused before anything started (no log line)');
      assert.equal(fs.existsSync(path.join(dir, 'endpoints.json')), false);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the local run with only MERIDIAN__LOCALCHAIN__ENABLED=false names, in one line, every component left without the chain (exit 2)', async () => {
    const dir = tmpDir();
    try {
      const r = await runCli(['start', '--endpoints', path.join(dir, 'endpoints.json')], 60_000, { ...localEnv(), MERIDIAN__LOCALCHAIN__ENABLED: 'false' });
      assert.equal(r.code, 2, r.stderr);
      oneLine(r, /^meridian start: cannot start: gateways\.rpc\.enabled .*MERIDIAN__GATEWAYS__RPC__ENABLED=false; gateways\.submit\.enabled .*MERIDIAN__GATEWAYS__SUBMIT__ENABLED=false; demo\.enabled needs the local chain .*MERIDIAN__DEMO__ENABLED=false$/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("the README's replay recipe starts the service without the local chain, ingest listening, and stops cleanly", async () => {
    const readme = fs.readFileSync(path.join(projectRoot(), 'README.md'), 'utf8');
    const recipe = readme.split('\n').find((l) => l.startsWith('MERIDIAN__LOCALCHAIN__ENABLED=false '));
    assert.ok(recipe !== undefined, 'the README has the replay recipe');
    const set = Object.fromEntries([...recipe.matchAll(/(MERIDIAN__\w+)=(\S+)/g)].map((m) => [m[1]!, m[2]!]));
    assert.ok(Object.keys(set).length >= 2, recipe);
    const dir = tmpDir();
    const file = path.join(dir, 'endpoints.json');
    const { cmd, args } = cliCommand();
    // The EVM endpoints (two local anvils) are off only to keep the test cheap: they do not depend on the chain.
    const env = { ...process.env, ...localEnv(), ...set, MERIDIAN__GATEWAYS__EVM__ENABLED: 'false' };
    const child = spawn(cmd, [...args, 'start', '--endpoints', file], { cwd: projectRoot(), env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (out += b.toString()));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    try {
      await waitFor(() => {
        if (child.exitCode !== null) throw new Error(`start exited ${child.exitCode}:\n${out}`);
        return fs.existsSync(file);
      }, 90_000, 'endpoints file', 100);
      const e = JSON.parse(fs.readFileSync(file, 'utf8')) as Endpoints;
      assert.equal(e.chain, undefined);
      assert.ok(e.ingest !== undefined && e.stream !== undefined, JSON.stringify(e));
      child.kill('SIGTERM');
      assert.equal(await exited, 0, out);
      assert.doesNotMatch(out, STACK, out);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('config: every enabled key is a boolean', () => {
  it('ingest.enabled with a typo is refused like every other enabled key, not read as false', () => {
    assert.throws(() => parseConfig({ ingest: { enabled: 'flase' } }), (e: unknown) => e instanceof ConfigError && /^ingest\.enabled: expected true or false, got "flase"$/.test(e.message));
    assert.throws(() => parseConfig({ fanout: { enabled: 'flase' } }), ConfigError);
    assert.equal(parseConfig({ ingest: { enabled: 'false' } }).ingest.enabled, false);
    assert.equal(parseConfig({ ingest: { enabled: '0' } }).ingest.enabled, false);
    assert.equal(parseConfig({ ingest: {} }).ingest.enabled, true);
  });
});

describe('config: a value of the wrong type is refused naming its key', () => {
  type Obj = Record<string, unknown>;
  const set = (root: Obj, keyPath: string[], v: unknown): Obj => {
    const c = JSON.parse(JSON.stringify(root)) as Obj;
    let o = c;
    for (const k of keyPath.slice(0, -1)) o = (o[k] ??= {}) as Obj;
    o[keyPath[keyPath.length - 1]!] = v;
    return c;
  };
  const refused = (cfg: Obj, key: string): void => {
    assert.throws(() => parseConfig(cfg), (e: unknown) => e instanceof ConfigError && e.message.includes(key.split('.').pop()!), `${key} = "nope"`);
  };

  it('every boolean and number in the shipped configs (local, production example), given "nope"', () => {
    for (const file of ['local.json', 'production.example.json']) {
      const base = JSON.parse(fs.readFileSync(path.join(projectRoot(), 'infra', 'config', file), 'utf8')) as Obj;
      const leaves: string[][] = [];
      const walk = (o: Obj, at: string[]): void => {
        for (const [k, v] of Object.entries(o)) {
          if (v !== null && typeof v === 'object' && !Array.isArray(v)) walk(v as Obj, [...at, k]);
          else if (typeof v === 'boolean' || typeof v === 'number') leaves.push([...at, k]);
        }
      };
      walk(base, []);
      assert.ok(leaves.length >= 10, `${file}: ${leaves.length} typed keys`);
      for (const k of leaves) refused(set(base, k, 'nope'), k.join('.'));
    }
  });

  it('every enabled switch, present in a config or not', () => {
    const switches = ['metrics', 'ingest', 'fanout', 'localchain', 'demo', 'admin', 'billing', 'gateways.rpc', 'gateways.rpc.fleet', 'gateways.submit', 'gateways.submit.fleet', 'gateways.submit.quic', 'gateways.evm'];
    for (const sw of switches) refused(set({}, [...sw.split('.'), 'enabled'], 'flase'), `${sw}.enabled`);
  });
});

describe('broker addresses: masked without mangling anything else', () => {
  it('masks the host in a "Caused by" line and every host:port, and keeps stack frames whole', () => {
    const mask = brokerMasker(['kafka-7.internal.example:9092']);
    const cause = new KafkaJSConnectionError('Connection error: getaddrinfo ENOTFOUND kafka-7.internal.example', { broker: 'kafka-7.internal.example:9092', code: 'ENOTFOUND' });
    const err = maskError(new KafkaJSNumberOfRetriesExceeded(cause, { retryCount: 5, retryTime: 1000 }), mask);
    const text = `${err.message}\n${err.stack ?? ''}`;
    assert.ok(!text.includes('kafka-7.internal.example'), text);
    assert.match(text, /Caused by: KafkaJSConnectionError: Connection error: getaddrinfo ENOTFOUND \[broker\]/);
    // Frames keep file:line:column (this very file's frame among them).
    assert.match(text, /operator-errors\.test\.[jt]s:\d+:\d+\)/);
    assert.doesNotMatch(text, /\[broker\]:\d/);
    // Other addresses by shape (what the cluster advertises), IPv6 included; versions, times and frames are left alone.
    assert.equal(mask('to 10.0.0.5:9092, kafka-2:29092 and [fd00::5]:9093'), 'to [broker], [broker] and [broker]');
    for (const keep of ['at Socket.emit (node:events:519:28)', 'at f (/srv/app/node_modules/kafkajs/src/network/connection.js:210:23)', 'at 12:30:45', 'v1.2.3']) assert.equal(mask(keep), keep);
  });
});

describe('existing topics are not an error (real broker)', function () {
  this.timeout(120_000);

  it('a second instance creating the same topics logs nothing', async () => {
    const brokers = await kafkaBrokers();
    const { log, lines: logged } = quietLog();
    const spec = [{ name: `operr-existing-${process.pid}-${Date.now()}`, partitions: 2, compacted: false }];
    const first = new KafkaBus({ brokers, clientId: 'operr-first', log });
    const second = new KafkaBus({ brokers, clientId: 'operr-second', log });
    try {
      await first.createTopics(spec);
      await second.createTopics(spec); // the second instance's start: the topic is there
      assert.equal((await second.endOffsets(spec[0]!.name)).size, 2);
      assert.deepEqual(logged, [], 'no log line');
    } finally {
      await first.close();
      await second.close();
    }
  });
});

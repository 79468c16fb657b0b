import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError, applyEnv, loadConfig, parseConfig } from '../../infra/config';
import { projectRoot } from '../support/paths';

function tmpFile(content: string): string {
  const f = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'meridian-cfg-')), 'c.json');
  fs.writeFileSync(f, content);
  return f;
}

describe('config', () => {
  it('defaults to a single-machine setup: embedded bus, any shred version, leader check off', () => {
    const c = parseConfig({});
    assert.equal(c.bus.kind, 'embedded');
    assert.equal(c.ingest.shredVersion, null);
    assert.equal(c.ingest.leader.mode, 'off');
    assert.equal(c.fanout.port, 20202);
    assert.equal(c.fanout.heartbeatMs, 10_000);
    assert.equal(c.fanout.maxFilterUpdatesPerSec, 50);
    assert.equal(c.demo.enabled, false);
  });

  it('ingest: the window re-anchor time, and whether the config itself asked for the receive buffer', () => {
    const local = parseConfig({});
    assert.equal(local.ingest.windowResetMs, 10_000);
    assert.equal(local.ingest.recvBufferExplicit, false, 'the built-in request is a wish (info when capped)');
    const prod = loadConfig(path.join(projectRoot(), 'infra', 'config', 'production.example.json'), { MERIDIAN__INGEST__WINDOW_RESET_MS: '2500' });
    assert.equal(prod.ingest.recvBufferExplicit, true, 'production asks for its size (warn when capped)');
    assert.equal(prod.ingest.recvBufferBytes, 268_435_456);
    assert.equal(prod.ingest.windowResetMs, 2500);
  });

  it('reads a file and lets the environment override it', () => {
    const f = tmpFile(JSON.stringify({ fanout: { listen: '127.0.0.1:3000', heartbeatMs: 500 }, ingest: { shredVersion: 50093 } }));
    const c = loadConfig(f, { MERIDIAN__FANOUT__HEARTBEAT_MS: '250', KAFKA_BROKERS: 'a:9092,b:9092' });
    assert.equal(c.fanout.port, 3000);
    assert.equal(c.fanout.heartbeatMs, 250);
    assert.equal(c.ingest.shredVersion, 50093);
    assert.equal(c.bus.kind, 'kafka');
    assert.deepEqual(c.bus.brokers, ['a:9092', 'b:9092']);
  });

  it("bus.embedded: each topic's bounds by its TOPIC key, from the file or the environment, and one line for a key it does not know", () => {
    const d = parseConfig({}).bus.embedded!;
    assert.deepEqual(d.topics['stream.transactions'], { maxMessagesPerPartition: 50_000, maxBytesPerPartition: 64 * 1024 * 1024 });
    assert.deepEqual(d.topics['submit.traces'], { maxMessagesPerPartition: 20_000, maxBytesPerPartition: 16 * 1024 * 1024 });
    const f = tmpFile(JSON.stringify({ bus: { embedded: { streamEntries: { maxMessagesPerPartition: 1000 } } } }));
    const c = loadConfig(f, { MERIDIAN__BUS__EMBEDDED__STREAM_TRANSACTIONS__MAX_BYTES_PER_PARTITION: '8388608' }).bus.embedded!;
    assert.deepEqual(c.topics['stream.entries'], { maxMessagesPerPartition: 1000, maxBytesPerPartition: d.topics['stream.entries']!.maxBytesPerPartition });
    assert.deepEqual(c.topics['stream.transactions'], { maxMessagesPerPartition: 50_000, maxBytesPerPartition: 8 * 1024 * 1024 });
    assert.throws(() => parseConfig({ bus: { embedded: { 'stream.transactions': { maxMessagesPerPartition: 5 } } } }), (e: unknown) => e instanceof ConfigError && /bus\.embedded\.stream\.transactions: not a setting .*streamTransactions/.test(e.message));
    assert.throws(() => parseConfig({ bus: { embedded: { usageEvents: { maxBytesPerPartition: 10 } } } }), /bus\.embedded\.usageEvents\.maxBytesPerPartition: expected an integer in 1024\.\./);
  });

  it('SOLANA_RPC_URL switches the leader source to rpc', () => {
    const c = parseConfig(applyEnv({}, { SOLANA_RPC_URL: 'http://127.0.0.1:8899' }));
    assert.equal(c.ingest.leader.mode, 'rpc');
  });

  it('the shipped config files validate', () => {
    for (const name of ['local.json', 'production.example.json']) {
      const c = loadConfig(path.join(projectRoot(), 'infra', 'config', name), {});
      assert.ok(c.fanout.port > 0);
    }
  });

  const bad: Array<[string, unknown, RegExp]> = [
    ['unknown section', { fanuot: {} }, /unknown config section "fanuot"/],
    ['bad port', { fanout: { listen: 'localhost:99999' } }, /fanout\.listen: expected HOST:PORT/],
    ['bad integer', { fanout: { heartbeatMs: 'soon' } }, /fanout\.heartbeatMs: expected an integer/],
    ['kafka without brokers', { bus: { kind: 'kafka' } }, /bus\.brokers: required/],
    ['fixed leader without key', { ingest: { leader: { mode: 'fixed' } } }, /ingest\.leader\.key: required/],
    ['auth without rentals', { fanout: { auth: { mode: 'token' } }, rentals: { fromBus: false } }, /needs rentals/],
    ['bad enum', { fanout: { auth: { mode: 'maybe' } } }, /expected one of none, ip, token/],
    ["grpc-js's removed write path", { fanout: { transport: 'grpc-js', directWrites: false } }, /fanout\.directWrites: false is no longer supported/],
  ];
  for (const [what, raw, re] of bad) {
    it(`rejects ${what} with a message naming the field`, () => {
      assert.throws(() => parseConfig(raw), (e: unknown) => e instanceof ConfigError && re.test(e.message));
    });
  }

  it('names the file when it is not JSON', () => {
    const f = tmpFile('{ nope');
    assert.throws(() => loadConfig(f, {}), /is not valid JSON/);
  });
});

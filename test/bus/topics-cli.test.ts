import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Bus, BusMessage, ProduceRecord } from '../../bus/bus';
import { EmbeddedBus } from '../../bus/embedded';
import { Kafka, logLevel } from 'kafkajs';
import { KafkaBus } from '../../bus/kafka';
import { emptyRegistry } from '../../bus/rental-registry';
import type { RecordedRecord, RecordingMeta } from '../../bus/recording';
import { fileChunks, readRecording } from '../../bus/recording-io';
import { startAdmin, type AdminServer } from '../../infra/ops/admin/server';
import { kafkaBrokers } from '../support/kafka';
import { quietLog } from '../support/log-capture';
import { cliCommand } from '../support/paths';
import { waitFor } from '../support/wait';

// `meridian topics record|replay` as an operator runs them (the real CLI in a child process): straight against
// Kafka, and against a running service's embedded bus through its admin endpoint. Every field of every record
// (key, value, headers, partition, offset, timestamp; null keys, tombstones, binary bytes) survives record →
// file → replay, ranges by offset and by time select exactly the records they name, and a damaged file is
// refused in one line with nothing written.

interface Ran {
  code: number | null;
  out: string;
  err: string;
}

function cli(args: string[], env: Record<string, string>): Promise<Ran> {
  const { cmd, args: pre } = cliCommand();
  return new Promise((resolve) => {
    const child = spawn(cmd, [...pre, ...args], { env: { ...process.env, KAFKA_BROKERS: '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('close', (code) => resolve({ code, out, err }));
  });
}

const name = (p: string): string => `topics-cli-${p}-${randomBytes(4).toString('hex')}`;

/** Everything a topic holds, read from the beginning up to its end offsets. */
async function readAll(bus: Bus, topic: string): Promise<BusMessage[]> {
  const ends = await bus.endOffsets(topic);
  const want = [...ends.values()].reduce((n, e) => n + Number(e), 0);
  const got: BusMessage[] = [];
  const c = await bus.consume({ topics: [topic], from: 'beginning', onBatch: (b) => void got.push(...b) });
  await c.ready;
  await waitFor(() => got.length >= want, 60_000, `${want} records of ${topic}`);
  await c.close();
  return got.sort((a, b) => a.partition - b.partition || Number(a.offset) - Number(b.offset));
}

async function readFile(file: string): Promise<{ meta: RecordingMeta; records: RecordedRecord[] }> {
  let meta: RecordingMeta | undefined;
  const records: RecordedRecord[] = [];
  for await (const r of readRecording(fileChunks(file), (m) => (meta = m))) records.push(r);
  return { meta: meta!, records };
}

/** What a replay must reproduce: content and place, not the log's own offset and time. */
const content = (m: Pick<BusMessage, 'partition' | 'key' | 'value' | 'headers'>): unknown => ({
  partition: m.partition,
  key: m.key === null ? null : m.key.toString('hex'),
  value: m.value === null ? null : m.value.toString('hex'),
  headers: Object.fromEntries(Object.entries(m.headers).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => [k, v.toString('hex')])),
});
const full = (m: Pick<BusMessage, 'partition' | 'offset' | 'timestamp' | 'key' | 'value' | 'headers'>): unknown => ({ ...(content(m) as object), offset: m.offset, timestamp: m.timestamp });
const sorted = <T extends { partition: number; offset: string }>(ms: T[]): T[] => [...ms].sort((a, b) => a.partition - b.partition || Number(a.offset) - Number(b.offset));

function batch(tag: string, n: number): ProduceRecord[] {
  return Array.from({ length: n }, (_, i) => {
    const k = i % 5;
    return {
      // Every shape of record: keyed with headers, a null key, a tombstone, binary bytes, an explicit partition.
      key: k === 1 ? null : Buffer.from(`${tag}-key-${i % 7}`),
      value: k === 2 ? null : k === 3 ? randomBytes(40 + i) : Buffer.from(`${tag}-value-${i}`),
      headers: k === 0 ? { 'h-text': Buffer.from(`${tag}-${i}`), 'h-bin': Buffer.from([0, 255, i & 0xff]) } : ({} as Record<string, Buffer>),
      ...(k === 4 ? { partition: i % 3 } : {}),
    };
  });
}

function suite(kind: 'embedded' | 'kafka'): void {
  describe(`meridian topics record / replay on the ${kind} bus`, function () {
    this.timeout(180_000);
    let bus: Bus;
    let admin: AdminServer | undefined;
    let target: string[] = [];
    let env: Record<string, string> = {};
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'topics-cli-'));
    const multi = name('multi');
    const single = name('single');
    let first: BusMessage[] = [];
    let all: BusMessage[] = [];
    let singleAll: BusMessage[] = [];

    before(async () => {
      const { log } = quietLog();
      if (kind === 'kafka') {
        const brokers = await kafkaBrokers();
        bus = new KafkaBus({ brokers, clientId: 'topics-cli-test', log });
        env = { KAFKA_BROKERS: brokers.join(',') };
      } else {
        bus = new EmbeddedBus({ log });
        admin = await startAdmin(bus, emptyRegistry(), { host: '127.0.0.1', port: 0, regions: ['fra'], log });
        // The CLI finds the service through its endpoints file, as after `npm start`.
        const endpoints = path.join(dir, 'endpoints.json');
        fs.writeFileSync(endpoints, JSON.stringify({ admin: admin.address }));
        target = ['--endpoints', endpoints];
      }
      await bus.createTopics([
        { name: multi, partitions: 3, compacted: false },
        { name: single, partitions: 1, compacted: false },
      ]);
      await bus.produce(multi, batch('a', 20));
      await bus.produce(single, batch('s', 6).map((r) => ({ ...r, partition: 0 })));
      first = await readAll(bus, multi);
      // A clock fence, not a timing assumption: the second batch is appended after the first one's newest time.
      const newest = Math.max(...first.map((m) => m.timestamp));
      await waitFor(() => Date.now() > newest + 2, 5_000, 'the clock to pass the first batch');
      await bus.produce(multi, batch('b', 15));
      all = await readAll(bus, multi);
      singleAll = await readAll(bus, single);
      assert.equal(all.length, 35);
      assert.ok(Math.min(...all.slice().filter((m) => !first.some((f) => f.partition === m.partition && f.offset === m.offset)).map((m) => m.timestamp)) > newest);
    });
    /** Whether the bus has the topic (asked without creating it). */
    const exists = async (topic: string): Promise<boolean> => {
      if (bus instanceof EmbeddedBus) {
        try {
          bus.retained(topic);
          return true;
        } catch {
          return false;
        }
      }
      const a = new Kafka({ brokers: env.KAFKA_BROKERS!.split(','), logLevel: logLevel.NOTHING }).admin();
      await a.connect();
      try {
        return (await a.listTopics()).includes(topic);
      } finally {
        await a.disconnect();
      }
    };
    after(async () => {
      await admin?.close();
      await bus?.close();
      fs.rmSync(dir, { recursive: true, force: true });
    });

    it('records every field of two topics into one file, and replays them into new topics with keys, headers and partitions kept', async () => {
      const file = path.join(dir, 'all.mrec');
      const rec = await cli(['topics', 'record', '--topic', multi, '--topic', single, '--out', file, ...target], env);
      assert.equal(rec.code, 0, rec.err);
      assert.equal(rec.out.trim(), `recorded 41 records of ${multi}, ${single} to ${file} (${fs.statSync(file).size} bytes)`);
      assert.ok(!fs.existsSync(`${file}.partial`));

      const { meta, records } = await readFile(file);
      assert.deepEqual(meta.topics, [{ name: multi, partitions: 3 }, { name: single, partitions: 1 }]);
      assert.equal(meta.source.bus, kind);
      assert.equal(records.length, 41);
      // The file holds each record exactly as the source log had it, offset and append time included.
      assert.deepEqual(sorted(records.filter((r) => r.topic === multi)).map(full), all.map(full));
      assert.deepEqual(sorted(records.filter((r) => r.topic === single)).map(full), singleAll.map(full));

      const copyMulti = name('copy-multi');
      const copySingle = name('copy-single');
      const rep = await cli(['topics', 'replay', file, '--rename', `${multi}=${copyMulti}`, '--rename', `${single}=${copySingle}`, ...target], env);
      assert.equal(rep.code, 0, rep.err);
      assert.match(rep.out, /^replayed 41 of 41 records \(/);
      assert.ok(rep.out.includes(`${copyMulti} 35`) && rep.out.includes(`${copySingle} 6`), rep.out);
      const replayed = await readAll(bus, copyMulti);
      assert.equal(replayed.length, 35);
      // Same records on the same partitions in the same order per partition (offsets and times are the new log's).
      assert.deepEqual(replayed.map(content), all.map(content));
      assert.deepEqual((await readAll(bus, copySingle)).map(content), singleAll.map(content));
      assert.equal((await bus.endOffsets(copyMulti)).size, 3);
    });

    it('records [--from, --to) by offset in every partition', async () => {
      const file = path.join(dir, 'offsets.mrec');
      const rec = await cli(['topics', 'record', '--topic', multi, '--from', '2', '--to', '5', '--out', file, ...target], env);
      assert.equal(rec.code, 0, rec.err);
      const { records, meta } = await readFile(file);
      assert.deepEqual(meta.range, { from: 'offset:2', to: 'offset:5' });
      const expected = all.filter((m) => Number(m.offset) >= 2 && Number(m.offset) < 5);
      assert.ok(expected.length > 3, 'the range must select records in more than one partition');
      assert.equal(records.length, expected.length);
      assert.deepEqual(sorted(records).map(full), expected.map(full));
    });

    it('records from a time and up to a time (append times, ISO-8601)', async () => {
      const firstNewest = Math.max(...first.map((m) => m.timestamp));
      const cut = new Date(firstNewest + 1).toISOString();
      const later = all.filter((m) => m.timestamp >= firstNewest + 1);
      const earlier = all.filter((m) => m.timestamp < firstNewest + 1);
      assert.deepEqual([earlier.length, later.length], [20, 15]);

      const fromFile = path.join(dir, 'from-time.mrec');
      const a = await cli(['topics', 'record', '--topic', multi, '--from', cut, '--out', fromFile, ...target], env);
      assert.equal(a.code, 0, a.err);
      assert.deepEqual(sorted((await readFile(fromFile)).records).map(full), later.map(full));

      const toFile = path.join(dir, 'to-time.mrec');
      const b = await cli(['topics', 'record', '--topic', multi, '--to', cut, '--out', toFile, ...target], env);
      assert.equal(b.code, 0, b.err);
      assert.deepEqual(sorted((await readFile(toFile)).records).map(full), earlier.map(full));
    });

    it('follows the live topic when --to lies ahead, until it is reached', async () => {
      const live = name('live');
      await bus.createTopics([{ name: live, partitions: 1, compacted: false }]);
      const file = path.join(dir, 'live.mrec');
      await bus.produce(live, [{ key: Buffer.from('k0'), value: Buffer.from('v0') }]);
      const done = cli(['topics', 'record', '--topic', live, '--to', '3', '--out', file, ...target], env);
      // The header is on disk once the recorder has the topic's layout and is reading: the rest comes after.
      await waitFor(() => fs.existsSync(`${file}.partial`) && fs.statSync(`${file}.partial`).size > 0, 60_000, 'the recorder to start');
      for (let i = 1; i < 4; i++) await bus.produce(live, [{ key: Buffer.from(`k${i}`), value: Buffer.from(`v${i}`) }]);
      const r = await done;
      assert.equal(r.code, 0, r.err);
      assert.deepEqual((await readFile(file)).records.map((x) => x.value?.toString()), ['v0', 'v1', 'v2']);
    });

    it('refuses a corrupt or cut-short file in one line, exit 1, writing nothing', async () => {
      const good = path.join(dir, 'good.mrec');
      assert.equal((await cli(['topics', 'record', '--topic', single, '--out', good, ...target], env)).code, 0);
      const bytes = fs.readFileSync(good);
      const corrupt = Buffer.from(bytes);
      corrupt[bytes.length - 40] = corrupt[bytes.length - 40]! ^ 0x01; // one bit in the last record
      const bad = path.join(dir, 'bad.mrec');
      fs.writeFileSync(bad, corrupt);
      const cut = path.join(dir, 'cut.mrec');
      fs.writeFileSync(cut, bytes.subarray(0, bytes.length - 30));
      const junk = path.join(dir, 'junk.mrec');
      fs.writeFileSync(junk, 'not a recording at all');

      for (const [file, re] of [[bad, /checksum mismatch in the frame at byte \d+ \(the file is corrupt\)/], [cut, /truncated after \d+ records: no end frame/], [junk, /not a meridian topic recording \(bad magic\)/]] as const) {
        const dest = name('never');
        const r = await cli(['topics', 'replay', file, '--rename', `${single}=${dest}`, ...target], env);
        assert.equal(r.code, 1, r.err);
        assert.equal(r.out, '');
        const lines = r.err.trim().split('\n');
        assert.equal(lines.length, 1, r.err);
        assert.equal(lines[0]!.startsWith(`meridian topics: ${file}: `), true, r.err);
        assert.match(lines[0]!, re);
        // Nothing was written: the target topic was never even created.
        assert.equal(await exists(dest), false);
      }
    });
  });
}

suite('embedded');
suite('kafka');

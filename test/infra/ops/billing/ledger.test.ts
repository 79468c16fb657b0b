import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { BusMessage } from '../../../../bus/bus';
import { encodeUsageEvent, newUsageEvent, type UsageEvent } from '../../../../bus/topics/usage-events';
import { emptyLedger, hourOf, LedgerState, mergeRows, RECENT_IDS } from '../../../../infra/ops/billing/ledger';
import { buildReport, toCsv, writeReport } from '../../../../infra/ops/billing/report';
import { loadAllLedgers, loadLedger, saveLedger } from '../../../../infra/ops/billing/store';

let offset = 0;
function msg(e: UsageEvent, partition = 0, at = offset++): BusMessage {
  const { key, value } = encodeUsageEvent(e);
  return { topic: 'usage.events', partition, offset: String(at), key, value, headers: {}, timestamp: Date.now() };
}
const ev = (rental: string, method: string, units: number, time = new Date('2026-11-23T12:34:56Z'), chain?: number): UsageEvent =>
  newUsageEvent({ rental, surface: chain === undefined ? 'rpc' : 'evm', method, units, outcome: 'ok', time, ...(chain === undefined ? {} : { chain }) });

describe('billing ledger', () => {
  beforeEach(() => (offset = 0));

  it('sums units per rental × surface × method × hour (and chain for EVM)', () => {
    const st = new LedgerState(emptyLedger('usage.events', 0));
    const n = st.apply([
      msg(ev('a', 'getTransaction', 10)),
      msg(ev('a', 'getTransaction', 10)),
      msg(ev('a', 'getSlot', 1)),
      msg(ev('a', 'getSlot', 1, new Date('2026-11-23T13:00:00Z'))),
      msg(ev('b', 'eth_call', 1, undefined, 56)),
      msg(ev('b', 'eth_call', 1, undefined, 137)),
    ]);
    assert.equal(n, 6);
    const rows = mergeRows([st.ledger]);
    assert.equal(rows.length, 5);
    assert.deepEqual(rows.map((r) => [r.hour, r.rental, r.method, r.chain, r.units, r.events]), [
      ['2026-11-23T12:00:00Z', 'a', 'getSlot', undefined, 1, 1],
      ['2026-11-23T12:00:00Z', 'a', 'getTransaction', undefined, 20, 2],
      ['2026-11-23T12:00:00Z', 'b', 'eth_call', 137, 1, 1],
      ['2026-11-23T12:00:00Z', 'b', 'eth_call', 56, 1, 1],
      ['2026-11-23T13:00:00Z', 'a', 'getSlot', undefined, 1, 1],
    ]);
    assert.equal(st.ledger.nextOffset, '6');
  });

  it('counts an event id once, and skips records below nextOffset (a replay)', () => {
    const st = new LedgerState(emptyLedger('usage.events', 0));
    const e = ev('a', 'getBlock', 10);
    assert.equal(st.apply([msg(e), msg(e), msg(ev('a', 'getBlock', 10))]), 2);
    assert.equal(st.ledger.duplicates, 1);
    // The same records again (as after a crash before the commit): nothing changes.
    assert.equal(st.apply([msg(e, 0, 0), msg(e, 0, 1), msg(ev('a', 'x', 5), 0, 2)]), 0);
    assert.equal(mergeRows([st.ledger])[0]!.units, 20);
  });

  it('counts undecodable records as invalid without stopping', () => {
    const st = new LedgerState(emptyLedger('usage.events', 0));
    const bad: BusMessage = { ...msg(ev('a', 'm', 1)), value: Buffer.from('{"id":1}') };
    assert.equal(st.apply([bad, msg(ev('a', 'm', 3))]), 1);
    assert.equal(st.ledger.invalid, 1);
    assert.equal(st.ledger.nextOffset, '2');
  });

  it('remembers a bounded number of ids', () => {
    const st = new LedgerState(emptyLedger('usage.events', 0));
    const batch: BusMessage[] = [];
    for (let i = 0; i < RECENT_IDS * 2; i++) batch.push(msg(ev('a', 'm', 1)));
    st.apply(batch);
    assert.ok(st.ledger.recentIds.length <= RECENT_IDS * 1.25, `${st.ledger.recentIds.length}`);
    assert.equal(st.ledger.counted, RECENT_IDS * 2);
  });

  it('buckets by UTC hour', () => {
    assert.equal(hourOf('2026-11-23T23:59:59.999Z'), '2026-11-23T23:00:00Z');
    assert.equal(hourOf('2026-11-24T00:00:00.000+01:00'), '2026-11-23T23:00:00Z');
  });

  it('stores ledgers durably and writes report.json and report.csv from them', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'billing-'));
    try {
      const a = new LedgerState(emptyLedger('usage.events', 0));
      a.apply([msg(ev('r1', 'getTransaction', 10), 0)]);
      const b = new LedgerState(emptyLedger('usage.events', 1));
      b.apply([msg(ev('r1', 'getTransaction', 10), 1, 0), msg(ev('r2', 'sendTransaction', 1), 1, 1)]);
      saveLedger(dir, a.ledger);
      saveLedger(dir, b.ledger);
      assert.deepEqual(loadLedger(dir, 'usage.events', 1), b.ledger);
      assert.equal(loadLedger(dir, 'usage.events', 7).nextOffset, '0', 'a partition never seen starts at 0');
      const report = writeReport(dir);
      assert.equal(report.rows.length, 2);
      assert.deepEqual(report.totals, { units: 21, events: 3 });
      assert.deepEqual(JSON.parse(fs.readFileSync(path.join(dir, 'report.json'), 'utf8')).totals, report.totals);
      assert.equal(fs.readFileSync(path.join(dir, 'report.csv'), 'utf8'), toCsv(buildReport(loadAllLedgers(dir)).rows));
      assert.equal(fs.readFileSync(path.join(dir, 'report.csv'), 'utf8').split('\n')[1], '2026-11-23T12:00:00Z,r1,rpc,getTransaction,,20,2');
      assert.deepEqual(fs.readdirSync(dir).filter((n) => n.endsWith('.tmp')), [], 'no temp file left behind');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

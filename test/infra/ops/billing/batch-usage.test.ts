import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { BusMessage } from '../../../../bus/bus';
import { decodeUsageEvent, encodeUsageEvent, type Outcome, type Surface, type UsageEvent } from '../../../../bus/topics/usage-events';
import { emitRequestUsage, type RpcCall } from '../../../../gateways/core';
import type { RpcCaller } from '../../../../gateways/rpc/auth';
import { parseRpcGatewayConfig } from '../../../../gateways/rpc/config';
import { RpcMeter } from '../../../../gateways/rpc/meter';
import { parseRental } from '../../../../bus/topics/rentals';
import { emptyLedger, LedgerState, mergeRows, type BillingRow } from '../../../../infra/ops/billing/ledger';
import { buildReport } from '../../../../infra/ops/billing/report';

// Usage events per method and request (version 2: `calls`, units summed) against per call (version 1, what the
// gateway wrote before issue 35): the same requests, priced by the chain gateway's own meter, billed by the
// billing job's ledger, give the same rows and totals — units and calls per rental × surface × method × hour (×
// chain) — and a topic holding both versions bills each record as what it is.

const TIME = '2026-12-02T01:23:45.678Z';

/** A record exactly as the per-call codec wrote it (no `v`, no `calls`), one per call of the request. */
function v1Records(rental: string, surface: Surface, calls: readonly RpcCall[], units: readonly number[], outcome: Outcome, chain?: number): Buffer[] {
  return calls.map((c, i) => {
    const o: Record<string, unknown> = { id: randomUUID(), time: TIME, rental, surface, method: c.method, units: units[i] ?? 0, outcome };
    if (chain !== undefined) o.chain = chain;
    return Buffer.from(JSON.stringify(o));
  });
}

class Sink {
  readonly events: UsageEvent[] = [];
  emit(e: UsageEvent): void {
    this.events.push({ ...e, time: TIME }); // one hour for both sides: the hour is billed, not the millisecond
  }
}

let offset = 0;
const msg = (value: Buffer): BusMessage => ({ topic: 'usage.events', partition: 0, offset: String(offset++), key: null, value, headers: {}, timestamp: 1 });

function bill(values: readonly Buffer[]): { rows: BillingRow[]; counted: number } {
  offset = 0;
  const st = new LedgerState(emptyLedger('usage.events', 0));
  const counted = st.apply(values.map(msg));
  assert.equal(st.ledger.invalid, 0);
  return { rows: mergeRows([st.ledger]), counted };
}

const calls = (...methods: string[]): RpcCall[] => methods.map((method) => ({ method }) as RpcCall);
const repeat = (method: string, n: number): string[] => Array.from({ length: n }, () => method);

/** Requests as a gateway meters them: a rental, a surface, the calls, priced by the gateway's meter (or refused). */
interface Req {
  rental: string;
  surface: Surface;
  calls: RpcCall[];
  outcome: Outcome;
  chain?: number;
}

const REQUESTS: Req[] = [
  { rental: 'a', surface: 'rpc', calls: calls(...repeat('getHealth', 10)), outcome: 'ok' },
  { rental: 'a', surface: 'rpc', calls: calls('getSlot'), outcome: 'ok' },
  // Methods interleaved, repeated out of order, with a TPS method and a scan method among them.
  { rental: 'a', surface: 'rpc', calls: calls('getTransaction', 'getSlot', 'getTransaction', 'sendTransaction', 'getProgramAccounts', 'getSlot', 'getTransaction'), outcome: 'ok' },
  { rental: 'b', surface: 'rpc', calls: calls(...repeat('getTransaction', 10)), outcome: 'error' },
  { rental: 'b', surface: 'rpc', calls: calls(...repeat('getHealth', 4), 'getBalance', ...repeat('getHealth', 5)), outcome: 'rate_limited' },
  // Above the scan threshold of the grouping: 40 calls of 3 methods.
  { rental: 'b', surface: 'rpc', calls: calls(...Array.from({ length: 40 }, (_v, i) => ['getBlock', 'getSlot', 'getMultipleAccounts'][i % 3]!)), outcome: 'ok' },
  { rental: 'a', surface: 'rpc-ws', calls: calls('slotSubscribe'), outcome: 'ok' },
  { rental: 'c', surface: 'evm', calls: calls('eth_blockNumber', 'eth_gasPrice', 'eth_blockNumber'), outcome: 'ok', chain: 137 },
  { rental: 'c', surface: 'evm', calls: calls('eth_blockNumber'), outcome: 'ok', chain: 56 },
];

function priced(): Array<Req & { units: number[] }> {
  const meter = new RpcMeter({ ...parseRpcGatewayConfig({ region: '' }) });
  const rental = parseRental({ id: 'x', ips: ['127.0.0.1'], rps: 1e9, tps: 1e9 }) as unknown as RpcCaller;
  return REQUESTS.map((r) => {
    const a = meter.admit(rental, r.calls, 'http');
    if (a instanceof Promise || !a.ok) throw new Error('the bench rental is refused');
    a.release?.();
    // A refused request is charged nothing (http-proxy reports zeros); EVM calls are one unit each.
    const units = r.outcome === 'rate_limited' ? r.calls.map(() => 0) : r.surface === 'evm' ? r.calls.map(() => 1) : [...a.units];
    return { ...r, units };
  });
}

describe('billing: usage events per method and request bill what events per call billed', () => {
  it('gives the same rows and totals as per-call events for batches, singles, refusals, WebSocket and EVM', () => {
    const reqs = priced();
    const before = reqs.flatMap((r) => v1Records(r.rental, r.surface, r.calls, r.units, r.outcome, r.chain));
    const sink = new Sink();
    for (const r of reqs) emitRequestUsage(sink, r.rental, r.surface, r.calls, r.units, r.outcome, r.chain);
    const now = sink.events.map((e) => encodeUsageEvent(e).value);

    const old = bill(before);
    const neu = bill(now);
    assert.deepEqual(neu.rows, old.rows);
    const total = (rows: BillingRow[]): { units: number; events: number } => rows.reduce((s, r) => ({ units: s.units + r.units, events: s.events + r.events }), { units: 0, events: 0 });
    assert.deepEqual(total(neu.rows), total(old.rows));
    assert.equal(total(old.rows).events, reqs.reduce((s, r) => s + r.calls.length, 0));
    // The point of it: one record per method and request.
    assert.equal(old.counted, before.length);
    assert.equal(neu.counted, reqs.reduce((s, r) => s + new Set(r.calls.map((c) => c.method)).size, 0));
    assert.ok(neu.counted * 3 < old.counted, `${neu.counted} records against ${old.counted}`);
    // The batch of ten getHealth is one event of ten calls.
    const health = sink.events.filter((e) => e.rental === 'a' && e.method === 'getHealth');
    assert.deepEqual(health.map((e) => [e.calls, e.units, e.outcome]), [[10, old.rows.find((r) => r.rental === 'a' && r.method === 'getHealth')!.units, 'ok']]);
    // And the report the operator reads agrees to the unit.
    const ledgerOf = (values: Buffer[]): ReturnType<typeof emptyLedger> => {
      offset = 0;
      const st = new LedgerState(emptyLedger('usage.events', 0));
      st.apply(values.map(msg));
      return st.ledger;
    };
    assert.deepEqual(buildReport([ledgerOf(now)]).totals, buildReport([ledgerOf(before)]).totals);
  });

  it('bills a topic holding both versions: each per-call record as one call, each per-method record as its calls', () => {
    const reqs = priced();
    const half = Math.floor(reqs.length / 2);
    const sink = new Sink();
    for (const r of reqs.slice(half)) emitRequestUsage(sink, r.rental, r.surface, r.calls, r.units, r.outcome, r.chain);
    const mixed = [...reqs.slice(0, half).flatMap((r) => v1Records(r.rental, r.surface, r.calls, r.units, r.outcome, r.chain)), ...sink.events.map((e) => encodeUsageEvent(e).value)];
    const allOld = reqs.flatMap((r) => v1Records(r.rental, r.surface, r.calls, r.units, r.outcome, r.chain));
    assert.deepEqual(bill(mixed).rows, bill(allOld).rows);
  });

  it('reads a version 1 record as one call, and refuses a version it does not know or a count that is not one', () => {
    const v1 = v1Records('a', 'rpc', calls('getSlot'), [1], 'ok')[0]!;
    const e = decodeUsageEvent(v1);
    assert.ok(!('error' in e));
    assert.equal(e.calls, 1);
    const base = { id: randomUUID(), time: TIME, rental: 'a', surface: 'rpc', method: 'getSlot', units: 3, outcome: 'ok' };
    const d = (o: Record<string, unknown>): unknown => decodeUsageEvent(Buffer.from(JSON.stringify(o)));
    assert.deepEqual(d({ v: 2, ...base, calls: 3 }), { ...base, calls: 3 });
    assert.deepEqual(d({ v: 3, ...base, calls: 3 }), { error: 'version unsupported' });
    for (const calls of [0, -1, 1.5, '3', null]) assert.deepEqual(d({ v: 2, ...base, calls }), { error: 'calls invalid' }, String(calls));
    assert.deepEqual(d({ v: 2, ...base }), { error: 'calls invalid' });
    const { id, time, rental, surface, method, units, outcome } = base;
    assert.equal(encodeUsageEvent({ id, time, rental, surface: 'rpc', method, calls: 3, units, outcome: 'ok' }).value.toString(), JSON.stringify({ v: 2, id, time, rental, surface, method, calls: 3, units, outcome }));
  });
});

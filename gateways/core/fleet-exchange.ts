import { randomUUID } from 'node:crypto';
import type { Bus, Consumer } from '../../bus/bus';
import { TOPIC } from '../../bus/topics';
import { decodeFleetReport, encodeFleetReport } from '../../bus/topics/fleet-usage';
import type { Log } from '../../infra/base/log';
import { metrics as defaultRegistry, type Registry } from '../../infra/base/metrics';
import type { FleetBudget } from './fleet-budget';

// The background half of fleet-wide limits: every `intervalMs` this instance publishes what it spent of each
// budget since its previous report (an empty report is its heartbeat), and it reads every instance's reports,
// its own included, into its FleetBudgets. Nothing here is on the request path.
//
// At start it reads back the reports of the last window (offsets by time) before it answers, so an instance
// joining a busy fleet knows the rental's spend at once instead of admitting a whole window on its own. If the
// topic cannot be read (a cluster set up before it, topic creation off) the instance counts alone, as one
// instance always has, and says so once.

export interface FleetExchangeOptions {
  bus: Bus;
  /** Instances of one surface share budgets (rpc). */
  surface: string;
  budgets: Readonly<Record<string, FleetBudget>>;
  intervalMs: number;
  /** How far back a starting instance reads (the longest budget window). */
  lookbackMs: number;
  log: Log;
  topic?: string;
  now?: () => number;
  /** Where its gauges go (members, exchange out); the process's registry by default. */
  registry?: Registry;
}

export interface FleetExchange {
  readonly instance: string;
  close(): Promise<void>;
}

/** How long a start waits to read the last window's reports before it answers anyway. */
const CATCH_UP_MS = 5_000;

export async function startFleetExchange(o: FleetExchangeOptions): Promise<FleetExchange> {
  const topic = o.topic ?? TOPIC.fleetUsage;
  const now = o.now ?? Date.now;
  const instance = randomUUID();
  const names = Object.keys(o.budgets);
  let seq = 0;
  let closed = false;

  let ends: Map<number, string>;
  let from: Map<number, string>;
  try {
    ends = await o.bus.endOffsets(topic);
    from = await o.bus.offsetsForTime(topic, now() - o.lookbackMs);
  } catch (e) {
    o.log.warn({ topic, why: e instanceof Error ? e.message.split('\n')[0] : String(e) }, 'fleet limits off: the usage exchange topic cannot be read; this instance counts its rentals alone');
    return { instance, close: async () => undefined };
  }
  const caughtUp = new Map([...ends].filter(([p, end]) => BigInt(end) > BigInt(from.get(p) ?? end)));
  let onCaughtUp: () => void = () => undefined;
  const caught = new Promise<void>((r) => (onCaughtUp = r));
  if (caughtUp.size === 0) onCaughtUp();

  const consumer: Consumer = await o.bus.consume({
    topics: [topic],
    from: { offsets: new Map([[topic, from]]) },
    onBatch: (messages) => {
      const t = now();
      for (const m of messages) {
        const r = decodeFleetReport(m.value);
        if (r !== null && r.surface === o.surface) {
          if (r.instance === instance) {
            for (const n of names) o.budgets[n]!.echoed(r.seq, t);
          } else {
            for (const n of names) o.budgets[n]!.peerReport(r.instance, r.spent[n] ?? {}, r.time, t);
          }
        }
        const end = caughtUp.get(m.partition);
        if (end !== undefined && BigInt(m.offset) + 1n >= BigInt(end)) {
          caughtUp.delete(m.partition);
          if (caughtUp.size === 0) onCaughtUp();
        }
      }
    },
  });
  await consumer.ready;
  let timeout: NodeJS.Timeout | undefined;
  await Promise.race([caught, new Promise<void>((r) => (timeout = setTimeout(r, CATCH_UP_MS)))]);
  clearTimeout(timeout);
  if (caughtUp.size > 0) o.log.warn({ topic }, 'fleet limits: the last window of usage reports was not read within 5 s; answering anyway');

  let sending: Promise<void> | null = null;
  const tick = (): void => {
    if (closed || sending !== null) return; // a report still being produced: the next one carries both intervals
    const t = now();
    seq++;
    const spent: Record<string, Record<string, number>> = {};
    for (const n of names) spent[n] = o.budgets[n]!.report(seq, t);
    const rec = encodeFleetReport({ v: 1, instance, surface: o.surface, seq, time: t, spent });
    const sent = seq;
    sending = o.bus.produce(topic, [rec]).then(
      () => undefined,
      (e: unknown) => {
        // Its spend rides with the next report (FleetBudget.unsent): the others learn it when the bus is back.
        for (const n of names) o.budgets[n]!.unsent(sent);
        o.log.warn({ why: e instanceof Error ? e.message.split('\n')[0] : String(e) }, 'fleet usage report not sent: its spend goes with the next report');
      },
    ).finally(() => {
      sending = null;
    });
  };
  // What an operator (and the fleet test) needs to tell a limiter holding a rental to its part from one counting
  // alone: the members this instance counts, and whether its exchange is out (its own reports not read back).
  const registry = o.registry ?? defaultRegistry;
  const lead = o.budgets[names[0]!]!;
  const out = (): boolean => names.some((n) => o.budgets[n]!.exchangeOut(now()));
  const gauges = [
    registry.gauge('meridian_fleet_members', 'Fleet instances this one counts in its rentals\' budgets, itself included', { surface: o.surface }, () => lead.members(now())),
    registry.gauge('meridian_fleet_exchange_out', '1 while this instance holds to its part of each budget: its usage reports are not read back, or a peer kept through an outage has not reported since', { surface: o.surface }, () => (out() ? 1 : 0)),
  ];
  let wasOut = false;
  const watch = (): void => {
    const isOut = out();
    if (isOut === wasOut) return;
    wasOut = isOut;
    const at = { surface: o.surface, members: lead.members(now()) };
    if (isOut) o.log.warn(at, 'fleet exchange out: this instance holds to its part of each rental until its usage reports come back');
    else o.log.info(at, 'fleet exchange back: usage reports read back again');
  };
  const timer = setInterval(() => {
    watch();
    tick();
  }, o.intervalMs);
  timer.unref();
  tick();
  o.log.info({ surface: o.surface, intervalMs: o.intervalMs, budgets: names }, 'fleet limits on: usage exchanged with the other instances');
  return {
    instance,
    close: async () => {
      closed = true;
      clearInterval(timer);
      for (const g of gauges) registry.remove(g);
      await sending;
      await consumer.close();
    },
  };
}

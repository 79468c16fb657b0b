import assert from 'node:assert/strict';
import type { Bus, BusMessage, ConsumeOptions } from '../../../bus/bus';
import { EmbeddedBus } from '../../../bus/embedded';
import { defaultTopicSpecs, TOPIC } from '../../../bus/topics';
import { FleetBudget, startFleetExchange, type FleetExchange } from '../../../gateways/core';
import { Registry } from '../../../infra/base/metrics';
import { fleetGauges } from '../../support/fleet-gauges';
import { quietLog } from '../../support/log-capture';
import { waitFor } from '../../support/wait';

// What an operator is told of an instance's fleet: its gauges (members counted, exchange out) and one line each
// way when its exchange goes out and comes back. Two exchanges on the embedded bus; one instance's reads are held
// back (its reports still reach the log, it reads none, its own included: the bus out for it), then let go.

const EXPIRY_MS = 1_000; // the default: an event loop stalled under load for less does not flip it
const INTERVAL_MS = 100;

/** The bus, with one reader's batches held while the gate is shut (they are delivered, in order, when it opens). */
function gatedReads(bus: Bus): { bus: Bus; shut(): void; open(): void } {
  let gate: Promise<void> | null = null;
  let release: () => void = () => undefined;
  const gated = new Proxy(bus, {
    get(target, p, receiver) {
      if (p === 'consume')
        return (o: ConsumeOptions) =>
          target.consume({
            ...o,
            onBatch: async (ms: BusMessage[]) => {
              while (gate !== null) await gate;
              await o.onBatch(ms);
            },
          });
      const v: unknown = Reflect.get(target, p, receiver);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return {
    bus: gated,
    shut: () => void (gate ??= new Promise<void>((r) => (release = r))),
    open: () => {
      gate = null;
      release();
    },
  };
}

describe('fleet exchange: members and exchange-out gauges, and the lines an operator reads', function () {
  this.timeout(30_000);
  const open: FleetExchange[] = [];
  let gate: ReturnType<typeof gatedReads> | undefined;
  after(async () => {
    gate?.open(); // a held batch would hold its reader's close
    for (const x of open) await x.close();
  });

  it('counts its peer, says once when its reports stop coming back and once when they are back, and lets a closed peer go', async () => {
    const bus = new EmbeddedBus({ log: quietLog().log });
    await bus.createTopics(defaultTopicSpecs().filter((s) => s.name === TOPIC.fleetUsage));
    const start = async (b: Bus, registry: Registry, log = quietLog()) => {
      const budgets = { rps: new FleetBudget({ windowMs: 10_000, memberExpiryMs: EXPIRY_MS }) };
      const x = await startFleetExchange({ bus: b, surface: 'rpc', budgets, intervalMs: INTERVAL_MS, lookbackMs: 10_000, log: log.log, registry });
      open.push(x);
      return { x, lines: log.lines };
    };
    gate = gatedReads(bus);
    const ra = new Registry();
    const a = await start(gate.bus, ra);
    const rb = new Registry();
    const b = await start(bus, rb);

    await waitFor(() => fleetGauges(ra.render()).members === 2 && fleetGauges(rb.render()).members === 2, 5_000, 'each counts the other', 10);
    assert.deepEqual(fleetGauges(ra.render()), { members: 2, out: 0 });

    // A reads nothing: its own reports stop coming back, so it keeps its peer and holds to its part.
    gate.shut();
    await waitFor(() => fleetGauges(ra.render()).out === 1, 5_000, 'A takes its exchange for out', 10);
    assert.equal(fleetGauges(ra.render()).members, 2, 'a peer silent with the bus is kept');
    await waitFor(() => a.lines.some((l) => l.includes('fleet exchange out')), 2_000, 'the warning', 10);
    assert.deepEqual(fleetGauges(rb.render()), { members: 2, out: 0 }, 'B still reads both');
    const outLines = a.lines.filter((l) => l.includes('fleet exchange out'));
    assert.equal(outLines.length, 1, 'said once');
    assert.equal(JSON.parse(outLines[0]!).level, 40);

    gate.open();
    await waitFor(() => fleetGauges(ra.render()).out === 0, 5_000, 'A has its exchange back', 10);
    await waitFor(() => a.lines.some((l) => l.includes('fleet exchange back')), 2_000, 'the line when it is back', 10);
    assert.equal(a.lines.filter((l) => l.includes('fleet exchange out')).length, 1, 'out said once in all');
    assert.equal(fleetGauges(ra.render()).members, 2);

    // B closes: A lets it go after the expiry; nothing is out.
    await b.x.close();
    await waitFor(() => fleetGauges(ra.render()).members === 1, 5_000, 'A counts itself alone', 10);
    assert.equal(fleetGauges(ra.render()).out, 0);
    for (const l of [...a.lines, ...b.lines]) assert.doesNotMatch(l, /embedded:|\d+\.\d+\.\d+\.\d+/, 'no address in a line');
    await a.x.close();
    await bus.close();
  });
});

import type { RpcCaller } from '../../gateways/rpc/auth';
import { parseRpcGatewayConfig } from '../../gateways/rpc/config';
import { RpcMeter } from '../../gateways/rpc/meter';
import { FleetBudget } from '../../gateways/core';
import { parseRental } from '../../bus/topics/rentals';
import type { RpcCall } from '../../gateways/core';
import type { BenchResult } from './stats';

// What fleet-wide limits add to a request: the chain gateway's meter (RpcMeter.admit, the per-request work the
// fleet changes) with this instance's windows alone beside the same meter counting the fleet's spend, in one
// process, interleaved in blocks of 2,000 calls so a burst of another process lands on both. The fleet meter has
// two peers whose reports arrive every 200 ms (simulated time advances 50 µs per call) and its own reports go out
// and come back, as on the bus. The exchange itself (one message per 200 ms per instance) is off the request path.
// The gateway end to end, with the HTTP hop, is `rpc` (its "fleet limits on" rows); this isolates the meter so the
// figure is not buried in the machine's noise.

const CALLS = Number(process.env.FLEET_BENCH_CALLS ?? 2_000_000);
const BLOCK = 2_000;

function meterPair(): { local: RpcMeter; fleet: RpcMeter; budgets: { rps: FleetBudget; tps: FleetBudget }; clock: { t: number } } {
  const cfg = parseRpcGatewayConfig({ region: '' });
  const clock = { t: 1_700_000_000_000 };
  const now = (): number => clock.t;
  const budgets = { rps: new FleetBudget({ windowMs: cfg.rpsWindowMs, memberExpiryMs: 1_000 }), tps: new FleetBudget({ windowMs: cfg.tpsWindowMs, memberExpiryMs: 1_000 }) };
  return { local: new RpcMeter({ ...cfg, now }), fleet: new RpcMeter({ ...cfg, now, budgets }), budgets, clock };
}

export async function benchFleetMeter(): Promise<BenchResult[]> {
  const rental = parseRental({ id: 'bench', ips: ['127.0.0.1'], rps: 1e9, tps: 1e9 }) as unknown as RpcCaller;
  const single: readonly RpcCall[] = [{ method: 'getHealth' } as RpcCall];
  const batch: readonly RpcCall[] = Array.from({ length: 10 }, () => ({ method: 'getHealth' }) as RpcCall);
  const out: BenchResult[] = [];
  for (const [name, calls] of [['getHealth', single], ['batch of 10 getHealth', batch]] as const) {
    const { local, fleet, budgets, clock } = meterPair();
    let tLocal = 0;
    let tFleet = 0;
    let seq = 0;
    let nextReport = clock.t;
    for (let done = 0; done < CALLS; done += 2 * BLOCK) {
      const order = (done / (2 * BLOCK)) % 2 === 0 ? [local, fleet] : [fleet, local];
      for (const m of order) {
        const t0 = process.hrtime.bigint();
        for (let i = 0; i < BLOCK; i++) {
          clock.t += 0.05;
          const a = m.admit(rental, calls, 'http');
          if (!('ok' in a) || a.ok !== true) throw new Error('refused');
        }
        const ns = Number(process.hrtime.bigint() - t0);
        if (m === local) tLocal += ns;
        else tFleet += ns;
      }
      // The exchange's work between blocks (off the timed path, as it is off the request path).
      if (clock.t >= nextReport) {
        nextReport = clock.t + 200;
        seq++;
        for (const b of [budgets.rps, budgets.tps]) {
          b.report(seq, clock.t);
          b.echoed(seq, clock.t);
          b.peerReport('peer-a', { bench: 40 }, clock.t, clock.t);
          b.peerReport('peer-b', { bench: 40 }, clock.t, clock.t);
        }
      }
    }
    const half = CALLS / 2;
    out.push({
      bench: 'fleet-meter',
      case: `RpcMeter.admit, ${name}`,
      figures: { local_ns_per_request: tLocal / half, fleet_ns_per_request: tFleet / half, added_ns: (tFleet - tLocal) / half, fleet_over_local: tFleet / tLocal },
      note: `${CALLS.toLocaleString('en')} requests, interleaved blocks of ${BLOCK}; fleet meter with 2 peers reporting every 200 ms`,
    });
  }
  return out;
}

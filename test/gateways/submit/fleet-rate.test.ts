import assert from 'node:assert/strict';
import fc from 'fast-check';
import { KafkaBus } from '../../../bus/kafka';
import { FleetBudget, startFleetExchange, type FleetExchange } from '../../../gateways/core';
import { FLEET_TPS_WINDOW_MS, RateLimiter } from '../../../gateways/submit/rate-limit';
import { kafkaBrokers } from '../../support/kafka';
import { quietLog } from '../../support/log-capture';
import { waitFor } from '../../support/wait';

// The submission service's TPS, fleet-wide: each instance's token bucket plus the fleet's count of the last second,
// exchanged over a real Kafka broker (each instance its own client and reader, as separate processes would be).
// Alone it answers as the bucket always has; three behind a round-robin client keep the rental's TPS in every second.

const TPS = 50;

describe('submission: fleet-wide TPS', function () {
  this.timeout(120_000);

  it('with no peer, the limiter answers exactly as the bucket alone, call for call (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 300 }), { minLength: 1, maxLength: 300 }), fc.integer({ min: 1, max: 40 }), (gaps, tps) => {
        let t = 1_000;
        const clock = (): number => t;
        const alone = new RateLimiter(100, clock);
        const fleet = new RateLimiter(100, clock, new FleetBudget({ windowMs: FLEET_TPS_WINDOW_MS, memberExpiryMs: 1_000 }), () => 1_700_000_000_000 + t);
        for (const g of gaps) {
          t += g;
          assert.equal(fleet.take('r', tps), alone.take('r', tps));
        }
      }),
      { numRuns: 200 },
    );
  });

  it('alone again after being in a fleet (peers silent: the bus down), one instance admits at most the rental in any second', () => {
    const tps = 10;
    let t = 0;
    const wall0 = 1_700_000_000_000;
    const budget = new FleetBudget({ windowMs: FLEET_TPS_WINDOW_MS, memberExpiryMs: 1_000 });
    const limiter = new RateLimiter(100, () => t, budget, () => wall0 + t);
    const admitted: number[] = [];
    // 0–3 s: a peer spends the whole rental (1 every 100 ms) and this instance, offered 100/s, gets nothing, so
    // its bucket stays full. From 3 s the peer is silent; from ~4 s it has expired and this instance is alone.
    for (; t < 6_000; t += 10) {
      if (t < 3_000 && t % 100 === 0) budget.peerReport('peer', { r: 1 }, wall0 + t, wall0 + t);
      if (limiter.take('r', tps)) admitted.push(t);
    }
    const held = admitted.filter((a) => a >= 1_000 && a < 3_000).length;
    assert.ok(held <= 1, `admitted ${held} while the peer's reports filled the window`);
    let peak = 0;
    for (let s = 1_000; s + 1_000 <= 6_000; s += 10) peak = Math.max(peak, admitted.filter((a) => a >= s && a < s + 1_000).length);
    // The bucket alone would admit its saved burst (10) plus a second's refill (10) in the second after the expiry.
    assert.ok(peak <= tps, `${peak} admitted in one second at ${tps} TPS`);
    assert.ok(admitted.filter((a) => a >= 5_000).length >= tps * 0.9, 'still the rental per second once alone');
  });

  it(`three instances on a real broker, round-robin at 3× the rental: at most ${TPS}·1.1 + 2 in any second`, async () => {
    const brokers = await kafkaBrokers();
    const topic = `fleet.usage.submit-test-${process.pid}-${Date.now()}`;
    const { log } = quietLog('warn');
    const buses = Array.from({ length: 3 }, (_v, i) => new KafkaBus({ brokers, clientId: `fleet-submit-${i}`, log }));
    const exchanges: FleetExchange[] = [];
    try {
      await buses[0]!.createTopics([{ name: topic, partitions: 1, compacted: false, retentionMs: 60_000 }]);
      const budgets = buses.map(() => new FleetBudget({ windowMs: FLEET_TPS_WINDOW_MS, memberExpiryMs: 1_000 }));
      for (let i = 0; i < 3; i++) exchanges.push(await startFleetExchange({ bus: buses[i]!, surface: 'submit', budgets: { tps: budgets[i]! }, intervalMs: 100, lookbackMs: FLEET_TPS_WINDOW_MS, log, topic }));
      const limiters = budgets.map((b) => new RateLimiter(undefined, undefined, b));
      // Every instance hears the others before the load starts (heartbeats): a fleet, not three soloists.
      await waitFor(() => budgets.every((b) => b.members(Date.now()) === 3), 20_000, 'three members', 20);
      const admitted: number[] = [];
      const t0 = Date.now();
      let k = 0;
      for (let n = 0; Date.now() - t0 < 8_000; n++) {
        const due = t0 + (n * 1000) / (3 * TPS);
        const wait = due - Date.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        if (limiters[k++ % 3]!.take('fleet-rental', TPS)) admitted.push(Date.now());
      }
      let peak = 0;
      for (let s = t0; s + 1_000 <= t0 + 8_000; s += 50) peak = Math.max(peak, admitted.filter((a) => a >= s && a < s + 1_000).length);
      const last = admitted.filter((a) => a >= t0 + 6_000 && a < t0 + 8_000).length / 2;
      process.stdout.write(`      max ${peak} submissions in a second (${(peak / TPS).toFixed(3)}× the rental); ${last} per second over the last 2 s\n`);
      assert.ok(peak <= TPS * 1.1 + 2, `${peak} in a second`);
      assert.ok(last >= TPS * 0.8, `only ${last} per second admitted`);
    } finally {
      for (const e of exchanges) await e.close();
      for (const b of buses) await b.close();
    }
  });
});

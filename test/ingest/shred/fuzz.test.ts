import assert from 'node:assert/strict';
import fc from 'fast-check';
import { FecResolver } from '../../../ingest/shred/fec-resolver';
import { fixedLeader } from '../../../ingest/shred/leader-keys';
import { parseShred } from '../../../ingest/shred/parse';
import { demo, turbine } from './support';

// parseShred and the resolver must never throw on what the network sends: random bytes, real shreds with
// bytes flipped, cut short or extended, mixed with genuine shreds so that sets exist and the duplicate,
// conflict and recovery paths run too.
const RUNS = Number(process.env.SHRED_FUZZ_RUNS ?? 10_000);

describe('shred parse + resolve never throw (property)', () => {
  const real = [...demo().packets, ...turbine().packets];
  const mutation = fc.record({
    base: fc.integer({ min: 0, max: real.length - 1 }),
    flips: fc.array(fc.tuple(fc.nat(1300), fc.integer({ min: 1, max: 255 })), { maxLength: 6 }),
    cut: fc.option(fc.nat(1300)),
    extra: fc.option(fc.uint8Array({ maxLength: 40 })),
  }).map(({ base, flips, cut, extra }) => {
    let b = Buffer.from(real[base]!);
    for (const [at, x] of flips) if (at < b.length) b[at]! ^= x;
    if (cut !== null) b = b.subarray(0, cut);
    if (extra !== null) b = Buffer.concat([b, extra]);
    return b;
  });
  const packet = fc.oneof(
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 1300 }).map((a) => Buffer.from(a)) },
    { weight: 1, arbitrary: fc.constantFrom(...real) },
    { weight: 4, arbitrary: mutation },
  );

  it(`${RUNS} random and mutated packets, leader check on and off`, () => {
    const resolvers = [
      new FecResolver({ leaders: fixedLeader(demo().publicKey), slotWindow: 1_000_000_000 }),
      new FecResolver({ slotWindow: 1_000_000_000, maxInProgressSets: 64 }),
      new FecResolver({ leaders: fixedLeader(turbine().leader), shredVersion: 27350 }),
    ];
    let outcomes = 0;
    fc.assert(
      fc.property(packet, (p) => {
        parseShred(p, null);
        for (const r of resolvers) {
          const o = r.push(p, 0);
          assert.ok(['rejected', 'ignored', 'okay', 'completes', 'equivocation'].includes(o.kind));
          outcomes++;
        }
      }),
      { numRuns: RUNS },
    );
    assert.equal(outcomes, RUNS * resolvers.length);
    // The genuine shreds in the mix complete sets: the property ran over live state, not only rejects.
    assert.ok(resolvers[0]!.stats().completedSets + resolvers[2]!.stats().completedSets > 0);
  });
});

import { rng } from '../../support/prng';
import { waitFor } from '../../support/wait';
import { startTestFanout, type TestFanout } from '../support';
import { RawH2Client } from './raw-h2-client';

// Shared by the own HTTP/2 server's tests: a seeded PRNG for fuzz cases and a suite fixture that starts a fanout
// and tears down every raw client a test opened. Polling for a condition is test/support/wait.ts's waitFor.

/** Deterministic PRNG (mulberry32), so a failing fuzz case can be replayed from its seed. */
export const prng = rng;

/** The port of a `host:port` address. */
export const portOf = (address: string): number => Number(address.slice(address.lastIndexOf(':') + 1));

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export interface RawSuite {
  /** The suite's fanout (set in its before hook). */
  readonly f: TestFanout;
  readonly port: number;
  /** A raw client, destroyed after the test; the test then waits for the fanout to hold no subscriber. */
  connect(opts?: Parameters<typeof RawH2Client.connect>[1]): Promise<RawH2Client>;
}

/** Registers before/afterEach/after hooks in the calling describe() for a fanout with these config overrides. */
export function rawSuite(over: Record<string, unknown>): RawSuite {
  const clients: RawH2Client[] = [];
  let f: TestFanout | undefined;
  const suite: RawSuite = {
    get f(): TestFanout {
      if (f === undefined) throw new Error('rawSuite: the fanout starts in the before hook');
      return f;
    },
    get port(): number {
      return portOf(suite.f.address);
    },
    async connect(opts) {
      const c = await RawH2Client.connect(suite.port, opts);
      clients.push(c);
      return c;
    },
  };
  before(async () => {
    f = await startTestFanout(over);
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) c.destroy();
    await waitFor(() => suite.f.fanout.stats().subscribers === 0, 5000, 'no subscribers left');
  });
  after(async () => {
    await f?.close();
  });
  return suite;
}

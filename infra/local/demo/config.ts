import { bool, int, section } from '../../base/config-read';

export interface DemoConfig {
  /** Send signed demo transfers to the local chain (the one-command local run turns this on; needs localchain). */
  enabled: boolean;
  /** Transfers per second over all demo accounts. */
  txPerSec: number;
  /** Distinct demo senders; their public keys go to the endpoints file so a newcomer can subscribe to one. */
  accounts: number;
  /** What each demo account is funded with from the chain's faucet payer at start. */
  fundLamports: number;
  /** Sends waiting for the chain's answer; a tick beyond it is skipped and counted (a slow chain is not queued for). */
  maxInFlight: number;
  /**
   * Make an address lookup table holding the demo accounts, and send every other transfer as a v0 transaction
   * whose recipient is named only through it (what the fanout's table resolution exercises).
   */
  lookupTable: boolean;
}

export function parseDemoConfig(raw: unknown): DemoConfig {
  const o = section(raw, 'demo');
  return {
    enabled: bool(o, 'enabled', 'demo', false),
    txPerSec: int(o, 'txPerSec', 'demo', 20, 1, 10_000),
    accounts: int(o, 'accounts', 'demo', 4, 1, 64),
    // 1,000 SOL each: with the submission service's 0.001 SOL tip per transfer that lasts days at the default rate.
    fundLamports: int(o, 'fundLamports', 'demo', 1_000_000_000_000, 1_000_000),
    maxInFlight: int(o, 'maxInFlight', 'demo', 64, 1, 10_000),
    lookupTable: bool(o, 'lookupTable', 'demo', true),
  };
}

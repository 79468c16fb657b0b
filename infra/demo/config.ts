import { bool, int, section } from '../config-read';

export interface DemoConfig {
  /** Shred signed demo transfers into the local ingest port (the one-command local run turns this on). */
  enabled: boolean;
  /** Transactions per slot and slot period; the defaults give ~100 tx/s. */
  txPerSlot: number;
  slotMs: number;
  /** Distinct demo payers; their public keys are printed so a newcomer can subscribe to one. */
  accounts: number;
}

export function parseDemoConfig(raw: unknown): DemoConfig {
  const o = section(raw, 'demo');
  return {
    enabled: bool(o, 'enabled', 'demo', false),
    txPerSlot: int(o, 'txPerSlot', 'demo', 40, 1, 2000),
    slotMs: int(o, 'slotMs', 'demo', 400, 10, 60_000),
    accounts: int(o, 'accounts', 'demo', 4, 1, 1000),
  };
}

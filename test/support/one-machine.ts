import { parseConfig } from '../../infra/config';
import type { Log } from '../../infra/base/log';
import { launch, type Running } from '../../infra/launcher';

// The service on one machine as the end-to-end tests launch it: ingest and the fanout on ephemeral loopback
// ports, metrics and the admin port off, and (unless `localchain: false`) the local chain node on an ephemeral
// port too, on the embedded bus or a Kafka broker. A test's own settings are merged into these, section by
// section (`fanout: { lookupTables: … }` keeps the fanout's listen address).

type Section = Record<string, unknown>;

export interface OneMachine {
  /** 'embedded', or the bootstrap addresses of a Kafka broker. */
  bus: 'embedded' | string[];
  log: Log;
  /** Default true. */
  localchain?: boolean;
  /** The local chain's localchain.blockFormat (default: the chain's, Alpenglow). */
  blockFormat?: 'alpenglow' | 'tower';
  /** More config: each section merged over the defaults above. */
  config?: Record<string, Section>;
}

export function oneMachineConfig(o: Omit<OneMachine, 'log'>): ReturnType<typeof parseConfig> {
  const base: Record<string, Section> = {
    bus: o.bus === 'embedded' ? { kind: 'embedded' } : { kind: 'kafka', brokers: o.bus },
    metrics: { enabled: false },
    admin: { enabled: false },
    ingest: { listen: '127.0.0.1:0' },
    fanout: { listen: '127.0.0.1:0' },
    ...(o.localchain === false ? {} : { localchain: { enabled: true, listen: '127.0.0.1:0', ...(o.blockFormat === undefined ? {} : { blockFormat: o.blockFormat }) } }),
  };
  for (const [k, v] of Object.entries(o.config ?? {})) base[k] = { ...base[k], ...v };
  return parseConfig(base);
}

/** Launches it; the caller stops the Running it gets (in its `after`). */
export function launchOneMachine(o: OneMachine): Promise<Running> {
  return launch(oneMachineConfig(o), o.log);
}

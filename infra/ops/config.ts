import { bool, hostPort, section, str, type Raw } from '../base/config-read';

// Config of the operator-facing parts of a run: the loopback admin endpoint (rentals on one machine) and the
// billing job the single-machine run starts on its embedded bus.

export interface AdminConfig {
  enabled: boolean;
  host: string;
  port: number;
}

export interface BillingConfig {
  enabled: boolean;
  group: string;
  outDir: string;
}

export function parseAdminConfig(raw: unknown): AdminConfig {
  const o: Raw = section(raw, 'admin');
  // Off unless asked for: the single-machine config turns it on; a Kafka deployment writes rentals to Kafka.
  return { enabled: bool(o, 'enabled', 'admin', false), ...hostPort(o, 'listen', 'admin', '127.0.0.1:9465') };
}

export function parseBillingConfig(raw: unknown): BillingConfig {
  const o: Raw = section(raw, 'billing');
  return { enabled: bool(o, 'enabled', 'billing', false), group: str(o, 'group', 'billing', 'meridian-billing'), outDir: str(o, 'outDir', 'billing', '.meridian/billing') };
}

// fleet.usage — what each gateway instance spent of each rental's budgets since its previous report, so that a
// fleet of instances together keeps a rental's limits (gateways/core/fleet-budget.ts). Every instance publishes
// one report per exchange interval (100–250 ms; an empty one is its heartbeat) and reads every report, its own
// included (its own coming back is how it knows the others have it). Short retention: a report older than the
// longest budget window counts for nothing.
//   key   = instance id (UTF-8)
//   value = UTF-8 JSON of FleetReport
//
// {"v":1,"instance":"<uuid>","surface":"rpc","seq":12,"time":1733091234567,"spent":{"rps":{"<rental>":14},"tps":{}}}

export interface FleetReport {
  v: 1;
  /** A random id per process: a restarted instance is a new member. */
  instance: string;
  /** The surface whose budgets these are (instances of one surface share budgets). */
  surface: string;
  /** Per instance, +1 per report. */
  seq: number;
  /** When the interval ended (ms since epoch, the instance's clock). */
  time: number;
  /** budget name → rental id → units spent in the interval. */
  spent: Record<string, Record<string, number>>;
}

export function encodeFleetReport(r: FleetReport): { key: Buffer; value: Buffer } {
  return { key: Buffer.from(r.instance, 'utf8'), value: Buffer.from(JSON.stringify(r), 'utf8') };
}

/** null for a value that is not a version-1 report (another version, a stray writer): it is skipped. */
export function decodeFleetReport(value: Buffer | null): FleetReport | null {
  if (value === null) return null;
  let o: unknown;
  try {
    o = JSON.parse(value.toString('utf8'));
  } catch {
    return null;
  }
  if (typeof o !== 'object' || o === null) return null;
  const r = o as Partial<FleetReport>;
  if (r.v !== 1 || typeof r.instance !== 'string' || typeof r.surface !== 'string' || typeof r.seq !== 'number' || typeof r.time !== 'number' || typeof r.spent !== 'object' || r.spent === null) return null;
  for (const b of Object.values(r.spent)) {
    if (typeof b !== 'object' || b === null) return null;
    for (const u of Object.values(b)) if (typeof u !== 'number' || !Number.isFinite(u) || u < 0) return null;
  }
  return r as FleetReport;
}

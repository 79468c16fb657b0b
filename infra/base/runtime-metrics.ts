import { collectDefaultMetrics, Registry as PromRegistry } from 'prom-client';
import type { FamilyLines, Registry } from './metrics';

// Node's runtime series under the names every Node service exports them (prom-client's default metrics:
// process_cpu_seconds_total, process_resident_memory_bytes, nodejs_heap_size_used_bytes, nodejs_eventloop_lag_seconds,
// nodejs_gc_duration_seconds, active handles, nodejs_version_info, …), so an operator sees memory and event-loop lag
// of each process. prom-client keeps them; this module only hands them to the project's registry, which serves
// them with everything else (`meridian start` for its own process, each fanout worker labelled worker="N").

type PromJson = Awaited<ReturnType<PromRegistry['getMetricsAsJSON']>>;

function labelText(labels: Record<string, string | number>): string {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${String(v).replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`);
  return parts.length === 0 ? '' : `{${parts.join(',')}}`;
}

/** prom-client's JSON as the registry's FamilyLines, `extra` labels on every series. Summaries (none by default) are left out. */
export function promFamilies(json: PromJson, extra?: Record<string, string>): FamilyLines[] {
  const out: FamilyLines[] = [];
  for (const f of json) {
    const type = String(f.type);
    if (type !== 'counter' && type !== 'gauge' && type !== 'histogram') continue;
    const lines = f.values.map((v) => `${(v as { metricName?: string }).metricName ?? f.name}${labelText({ ...(v.labels as Record<string, string | number>), ...extra })} ${v.value}`);
    out.push({ name: f.name, help: f.help, type, lines });
  }
  return out;
}

let started: PromRegistry | undefined;

/** Starts collecting this process's runtime metrics (once per process) and adds them to `registry`'s scrapes. */
export function exportRuntimeMetrics(registry: Registry): void {
  if (started !== undefined) return;
  started = new PromRegistry();
  collectDefaultMetrics({ register: started });
  const prom = started;
  registry.addLocal(async (extra) => promFamilies(await prom.getMetricsAsJSON(), extra));
}

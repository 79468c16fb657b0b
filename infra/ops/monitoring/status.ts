import type { Sample } from './exposition';

// What `meridian status` makes of two scrapes of a running instance's /metrics taken `seconds` apart, and of its
// /readyz: one entry per component that exports series (a component that does not run exports none and is left
// out), with its rates over the window, queue and budget use, upstream health and landing rate. Pure: the command
// (infra/commands/status.ts) does the HTTP. A component is `down` where the alert rules would page (no shreds, no
// healthy upstream), `warn` where they would warn (drops, budget over 80%, a route landing under half), else `ok`.

export type State = 'ok' | 'warn' | 'down';

export interface ComponentStatus {
  name: string;
  state: State;
  /** Why it is not ok, short; absent when ok. */
  reason?: string;
  /** The figures the line shows, by name (rates per second, counts, ratios 0..1). */
  values: Record<string, number>;
  line: string;
}

export interface StatusReport {
  /** HOST:PORT of the metrics endpoint asked (what the operator configured). */
  target: string;
  ready: boolean;
  /** Readiness checks failing, from /readyz ("not ready: a, b"). */
  notReady: string[];
  seconds: number;
  components: ComponentStatus[];
  /** Ready and no component down. */
  healthy: boolean;
}

class Scrape {
  private readonly byName = new Map<string, Sample[]>();
  constructor(samples: readonly Sample[]) {
    for (const s of samples) {
      let l = this.byName.get(s.name);
      if (l === undefined) this.byName.set(s.name, (l = []));
      l.push(s);
    }
  }
  has(name: string): boolean {
    return this.byName.has(name);
  }
  /** Sum of the series of `name` whose labels match every entry of `where` (a value starting with ! excludes it). */
  sum(name: string, where: Record<string, string> = {}): number {
    let n = 0;
    for (const s of this.byName.get(name) ?? []) if (matches(s.labels, where)) n += s.value;
    return n;
  }
  /** One label's values among the series of `name`. */
  values(name: string, label: string): string[] {
    const out = new Set<string>();
    for (const s of this.byName.get(name) ?? []) {
      const v = s.labels[label];
      if (v !== undefined) out.add(v);
    }
    return [...out];
  }
}

function matches(labels: Record<string, string>, where: Record<string, string>): boolean {
  for (const [k, v] of Object.entries(where)) {
    const have = labels[k] ?? ''; // as in PromQL, an absent label matches ""
    if (v.startsWith('!') ? have === v.slice(1) : have !== v) return false;
  }
  return true;
}

/** Per-second increase of a counter between the scrapes (a restart in between counts from zero). */
function rateOf(a: Scrape, b: Scrape, seconds: number, name: string, where?: Record<string, string>): number {
  const x = a.sum(name, where);
  const y = b.sum(name, where);
  return (y >= x ? y - x : y) / seconds;
}

/** 12345 → "12345", 2.5 → "2.5", 0.123 → "0.12". */
export function fmt(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  if (n === 0) return '0';
  const a = Math.abs(n);
  if (a >= 100) return n.toFixed(0);
  if (a >= 10) return n.toFixed(1).replace(/\.0$/, '');
  return n.toFixed(2).replace(/\.?0+$/, '');
}

export function bytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${fmt(v)} ${units[u]}`;
}

/** "1 subscriber", "2 subscribers". */
function count(n: number, what: string): string {
  return `${fmt(n)} ${what}${n === 1 ? '' : 's'}`;
}

function pct(r: number): string {
  return `${fmt(r * 100)}%`;
}

function component(name: string, values: Record<string, number>, parts: string[], problems: Array<[State, string] | null>): ComponentStatus {
  const found = problems.filter((p): p is [State, string] => p !== null);
  const worst = found.find((p) => p[0] === 'down') ?? found[0];
  const state: State = worst === undefined ? 'ok' : worst[0];
  return { name, state, ...(worst === undefined ? {} : { reason: found.map((p) => p[1]).join('; ') }), values, line: parts.join(' · ') };
}

export function statusReport(target: string, first: readonly Sample[], second: readonly Sample[], seconds: number, readiness: { ready: boolean; failing: string[] }): StatusReport {
  const a = new Scrape(first);
  const b = new Scrape(second);
  const rate = (name: string, where?: Record<string, string>): number => rateOf(a, b, seconds, name, where);
  const rise = (name: string, where?: Record<string, string>): number => Math.max(0, b.sum(name, where) - a.sum(name, where));
  const out: ComponentStatus[] = [];

  if (b.has('process_resident_memory_bytes')) {
    // The serving process itself (no worker label); fanout workers report theirs under worker="N".
    const own = { worker: '' };
    const workers = b.values('process_resident_memory_bytes', 'worker').length;
    const v = {
      rssBytes: b.sum('process_resident_memory_bytes', own),
      heapUsedBytes: b.sum('nodejs_heap_size_used_bytes', own),
      eventLoopP99Seconds: b.sum('nodejs_eventloop_lag_p99_seconds', own),
      cpu: rate('process_cpu_seconds_total', own),
      workers,
      workersRssBytes: b.sum('process_resident_memory_bytes') - b.sum('process_resident_memory_bytes', own),
    };
    const parts = [`rss ${bytes(v.rssBytes)}`, `heap ${bytes(v.heapUsedBytes)}`, `event loop p99 ${fmt(v.eventLoopP99Seconds * 1000)} ms`, `cpu ${pct(v.cpu)}`];
    if (workers > 0) parts.push(`${count(workers, 'fanout worker')} rss ${bytes(v.workersRssBytes)}`);
    out.push(component('process', v, parts, [v.eventLoopP99Seconds > 0.5 ? ['warn', 'event loop p99 over 0.5 s'] : null]));
  }

  if (b.has('meridian_ingest_packets_total')) {
    const v = {
      shredsPerSec: rate('meridian_ingest_shreds_total'),
      slotsDecodedPerSec: rate('meridian_ingest_slot_status_total', { status: 'decoded' }),
      transactionsPerSec: rate('meridian_ingest_transactions_total'),
      decodeErrorsPerSec: rate('meridian_ingest_batches_invalid_total') + rate('meridian_ingest_transactions_invalid_total'),
      fecSetsLostPerSec: rate('meridian_ingest_fec_sets_evicted_total'),
      udpQueue: b.sum('meridian_ingest_udp_queue_packets'),
      publishQueue: b.sum('meridian_ingest_publish_queue_batches'),
      drops: rise('meridian_ingest_udp_queue_drops') + rise('meridian_ingest_publish_queue_drops'),
    };
    out.push(
      component(
        'ingest',
        v,
        [`${fmt(v.shredsPerSec)} shreds/s`, `${fmt(v.slotsDecodedPerSec)} slots/s decoded`, `${fmt(v.transactionsPerSec)} tx/s`, `queues udp ${fmt(v.udpQueue)} publish ${fmt(v.publishQueue)}`, `${fmt(v.drops)} dropped`, `${fmt(v.decodeErrorsPerSec)} decode errors/s`],
        [
          v.shredsPerSec === 0 ? ['down', `no shreds in ${fmt(seconds)} s`] : null,
          v.shredsPerSec > 0 && v.slotsDecodedPerSec === 0 && seconds >= 2 ? ['warn', `no slot decoded in ${fmt(seconds)} s`] : null,
          v.drops > 0 ? ['warn', 'dropping at a full queue'] : null,
          v.decodeErrorsPerSec > 0 ? ['warn', 'decode errors'] : null,
        ],
      ),
    );
  }

  if (b.has('meridian_fanout_subscribers')) {
    const budget = b.sum('meridian_fanout_queue_budget_bytes');
    const queued = b.sum('meridian_fanout_queue_bytes_sum');
    const v = {
      subscribers: b.sum('meridian_fanout_subscribers'),
      connections: b.sum('meridian_fanout_connections'),
      responsesPerSec: rate('meridian_fanout_messages_sent_total'),
      bytesPerSec: rate('meridian_fanout_bytes_sent_total'),
      recordsPerSec: rate('meridian_fanout_transactions_total'),
      queuedBytes: queued,
      budgetBytes: budget,
      budgetUse: budget > 0 ? queued / budget : 0,
      slowConsumers: rise('meridian_fanout_slow_consumers_total'),
      refused: rise('meridian_fanout_streams_refused_total'),
    };
    out.push(
      component(
        'stream',
        v,
        [`${count(v.subscribers, 'subscriber')} on ${count(v.connections, 'connection')}`, `${fmt(v.recordsPerSec)} records/s in`, `${fmt(v.responsesPerSec)} responses/s`, `${bytes(v.bytesPerSec)}/s`, `queues ${bytes(queued)} of ${bytes(budget)} budget (${pct(v.budgetUse)})`, `${count(v.slowConsumers, 'slow consumer')} ended`],
        [v.budgetUse > 0.8 ? ['warn', 'queues over 80% of the budget'] : null, v.slowConsumers > 0 ? ['warn', 'slow consumers ended'] : null, v.refused > 0 ? ['warn', 'streams refused at a cap'] : null],
      ),
    );
  }

  for (const surface of b.values('meridian_gateway_upstreams_healthy', 'surface').sort()) {
    const w = { surface };
    const v = {
      upstreamsHealthy: b.sum('meridian_gateway_upstreams_healthy', w),
      requestsPerSec: rate('meridian_gateway_http_requests_total', w),
      errorsPerSec: rate('meridian_gateway_errors_total', w),
      upstreamFailuresPerSec: rate('meridian_gateway_upstream_failures_total', w),
      wsConnections: b.sum('meridian_gateway_ws_connections', w),
    };
    out.push(
      component(
        surface,
        v,
        [`${count(v.upstreamsHealthy, 'upstream')} healthy`, `${fmt(v.requestsPerSec)} requests/s`, `${fmt(v.errorsPerSec)} errors/s`, `${count(v.wsConnections, 'ws connection')}`],
        [v.upstreamsHealthy === 0 ? ['down', 'no healthy upstream'] : null, v.upstreamFailuresPerSec > 0 ? ['warn', 'requests no upstream answered'] : null],
      ),
    );
  }

  if (b.has('meridian_submit_submissions_total')) {
    const routes = b.values('meridian_submit_route_attempts_total', 'route').sort();
    const v: Record<string, number> = {
      acceptedPerSec: rate('meridian_submit_submissions_total', { result: 'accepted' }),
      refusedPerSec: rate('meridian_submit_submissions_total', { result: '!accepted' }),
      forwardErrorsPerSec: rate('meridian_submit_forward_errors_total'),
    };
    const parts = [`${fmt(v.acceptedPerSec!)} accepted/s`, `${fmt(v.refusedPerSec!)} refused/s`];
    const problems: Array<[State, string] | null> = [];
    for (const route of routes) {
      const attempts = b.sum('meridian_submit_route_attempts_total', { route });
      const landed = b.sum('meridian_submit_route_landed_total', { route });
      const ratio = attempts > 0 ? landed / attempts : 0;
      v[`route.${route}.landedPerSec`] = rate('meridian_submit_route_landed_total', { route });
      v[`route.${route}.landedSinceStart`] = ratio;
      parts.push(`route ${route} ${fmt(v[`route.${route}.landedPerSec`]!)} landed/s (${pct(ratio)} of attempts since start)`);
      if (attempts >= 100 && ratio < 0.5) problems.push(['warn', `route ${route} lands under half`]);
    }
    out.push(component('submit', v, parts, problems));
  }

  if (b.has('meridian_usage_events_produced_total')) {
    const v = {
      producedPerSec: rate('meridian_usage_events_produced_total'),
      buffered: b.sum('meridian_usage_buffered_events'),
      dropped: rise('meridian_usage_events_dropped_total', { reason: '!closed' }),
    };
    out.push(component('usage', v, [`${fmt(v.producedPerSec)} events/s produced`, `${fmt(v.buffered)} buffered`, `${fmt(v.dropped)} dropped`], [v.dropped > 0 ? ['warn', 'usage events dropped'] : null]));
  }

  if (b.has('meridian_billing_events_counted_total')) {
    const v = { countedPerSec: rate('meridian_billing_events_counted_total'), invalidPerSec: rate('meridian_billing_events_invalid_total'), lagRecords: b.sum('meridian_billing_lag_records') };
    out.push(
      component('billing', v, [`${fmt(v.countedPerSec)} events/s counted`, `${fmt(v.invalidPerSec)} invalid/s`, `lag ${fmt(v.lagRecords)} records`], [v.invalidPerSec > 0 ? ['warn', 'invalid usage events'] : null, v.lagRecords > 10_000 ? ['warn', 'over 10000 records behind'] : null]),
    );
  }

  if (b.has('meridian_localchain_slot')) {
    const v = { slot: b.sum('meridian_localchain_slot'), slotsPerSec: rate('meridian_localchain_slot'), executedPerSec: rate('meridian_localchain_transactions_executed') };
    out.push(component('chain', v, [`slot ${fmt(v.slot)}`, `${fmt(v.slotsPerSec)} slots/s`, `${fmt(v.executedPerSec)} tx/s executed`], [v.slotsPerSec === 0 && seconds >= 2 ? ['warn', `no new slot in ${fmt(seconds)} s`] : null]));
  }

  return { target, ready: readiness.ready, notReady: readiness.failing, seconds, components: out, healthy: readiness.ready && !out.some((c) => c.state === 'down') };
}

/** The screen: a header line, then one line per component. */
export function renderStatus(r: StatusReport): string {
  const head = `meridian at ${r.target}: ${r.ready ? 'ready' : `not ready (${r.notReady.join(', ') || 'readiness check failing'})`}; ${r.healthy ? 'healthy' : 'unhealthy'} (rates over the last ${fmt(r.seconds)} s)`;
  const width = Math.max(8, ...r.components.map((c) => c.name.length));
  const lines = r.components.map((c) => `  ${c.name.padEnd(width)}  ${c.state.padEnd(4)}  ${c.line}${c.reason === undefined ? '' : `  [${c.reason}]`}`);
  return [head, ...lines].join('\n') + '\n';
}

import type { Log } from '../../infra/base/log';
import { metrics as defaultRegistry, type Gauge, type Registry } from '../../infra/base/metrics';
import { Upstream, type PostFailure, type UpstreamEndpoint, type UpstreamOptions } from './upstream';

// The upstream nodes of one surface, with health:
//   - active: every `intervalMs` each upstream is probed by the surface's HealthProbe (Solana: getHealth and
//     the slot; EVM: eth_blockNumber). A probe that fails, or reports a height more than `maxLag` behind the
//     best upstream, makes the upstream unhealthy until a later probe passes;
//   - passive: a request that cannot connect, or whose connection drops, marks its upstream unhealthy at once
//     (the next probe can bring it back), so a dead node stops taking traffic before the next probe round.
// Requests go to the healthy upstream with the fewest requests in flight (ties: round robin).
// Failover: a request that failed is sent again to another healthy upstream only when the caller allows it
// (reads). A call that must never be duplicated (sendTransaction, eth_sendRawTransaction…) is sent exactly once:
// no retry, no hedge, not even when the first attempt's connection was refused (the contract says never).

export interface ProbeResult {
  ok: boolean;
  /** Chain height (slot, block number) the node reports; compared across upstreams for lag. */
  height?: number;
  /** Why it failed (for the log; never includes the URL). */
  why?: string;
}

/** Sends one JSON-RPC body to the upstream under probe and returns the parsed reply (or throws). */
export type ProbeCall = (body: string) => Promise<unknown>;

/** The surface's health check of one upstream. Must resolve (not throw) within the pool's probe timeout. */
export type HealthProbe = (call: ProbeCall, upstream: { index: number }) => Promise<ProbeResult>;

export interface UpstreamPoolOptions extends Partial<UpstreamOptions> {
  upstreams: readonly UpstreamEndpoint[];
  probe: HealthProbe;
  intervalMs?: number;
  probeTimeoutMs?: number;
  /** How far (in heights) behind the best healthy upstream an upstream may be and still serve. */
  maxLag?: number;
  /** Label for metrics ("rpc", "evm-56"). */
  surface: string;
  log: Log;
  registry?: Registry;
}

export type SendResult =
  | { readonly ok: true; readonly status: number; readonly body: Buffer; readonly upstream: number }
  | { readonly ok: false; readonly why: PostFailure | 'unavailable' | 'invalid' };

export interface SendOptions {
  /** May a failed attempt be repeated on another upstream? False for calls that must never be duplicated. */
  retry: boolean;
  /** Reply check (batch length, JSON shape); a failing reply counts as a failed attempt ('invalid'). */
  accept?: (status: number, body: Buffer) => boolean;
}

interface State {
  up: Upstream;
  healthy: boolean;
  height: number | undefined;
  lastWhy: string | undefined;
}

export class UpstreamPool {
  private readonly states: State[];
  private timer: NodeJS.Timeout | undefined;
  private rr = 0;
  private closed = false;
  private probing: Promise<void> | null = null;
  private readonly healthyGauge: Gauge;
  private readonly registry: Registry;
  readonly intervalMs: number;
  private readonly probeTimeoutMs: number;
  private readonly maxLag: number;

  constructor(private readonly opts: UpstreamPoolOptions) {
    if (opts.upstreams.length === 0) throw new RangeError('at least one upstream');
    const uo: UpstreamOptions = {
      connections: opts.connections ?? 128,
      timeoutMs: opts.timeoutMs ?? 30_000,
      maxResponseBytes: opts.maxResponseBytes ?? 128 * 1024 * 1024,
      keepAliveMs: opts.keepAliveMs ?? 4_000,
    };
    this.intervalMs = opts.intervalMs ?? 1_000;
    this.probeTimeoutMs = opts.probeTimeoutMs ?? 1_000;
    this.maxLag = opts.maxLag ?? Number.POSITIVE_INFINITY;
    // Healthy until the first probe says otherwise; start() runs that probe before anything is served.
    this.states = opts.upstreams.map((e, i) => ({ up: new Upstream(i, e, uo), healthy: true, height: undefined, lastWhy: undefined }));
    this.registry = opts.registry ?? defaultRegistry;
    this.healthyGauge = this.registry.gauge('meridian_gateway_upstreams_healthy', 'Upstreams currently healthy', { surface: opts.surface }, () => this.healthyCount());
  }

  /** Runs the first probe round, then keeps probing every intervalMs. */
  async start(): Promise<void> {
    await this.probeAll();
    const tick = (): void => {
      if (this.closed) return;
      this.probing = this.probeAll().finally(() => {
        this.probing = null;
        if (!this.closed) this.timer = setTimeout(tick, this.intervalMs);
      });
    };
    this.timer = setTimeout(tick, this.intervalMs);
  }

  healthyCount(): number {
    let n = 0;
    for (const s of this.states) if (s.healthy) n++;
    return n;
  }

  /** Health of each upstream, by index (tests, diagnostics). */
  health(): Array<{ index: number; healthy: boolean; height: number | undefined }> {
    return this.states.map((s) => ({ index: s.up.index, healthy: s.healthy, height: s.height }));
  }

  /** The WebSocket URL of a healthy upstream that has one, least busy first; undefined when none. */
  pickWs(exclude?: ReadonlySet<number>): { index: number; url: string } | undefined {
    const s = this.pick(exclude, true);
    return s === undefined ? undefined : { index: s.up.index, url: s.up.endpoint.ws! };
  }

  /** Marks an upstream unhealthy until its next passing probe (a WebSocket that could not connect, say). */
  markDown(index: number, why: string): void {
    const s = this.states[index];
    if (s !== undefined && s.healthy) {
      s.healthy = false;
      s.lastWhy = why;
      this.opts.log.warn({ upstream: s.up.name, why }, 'upstream marked unhealthy');
    }
  }

  async send(body: Buffer, o: SendOptions): Promise<SendResult> {
    let tried: Set<number> | undefined;
    let last: SendResult = { ok: false, why: 'unavailable' };
    for (;;) {
      const s = this.pick(tried, false);
      if (s === undefined) return last;
      const r = await s.up.post(body);
      if (r.ok) {
        if (o.accept === undefined || o.accept(r.status, r.body)) return { ok: true, status: r.status, body: r.body, upstream: s.up.index };
        last = { ok: false, why: 'invalid' };
      } else {
        last = { ok: false, why: r.why };
        if (r.why === 'connect' || r.why === 'dropped') this.markDown(s.up.index, r.why);
      }
      if (!o.retry) return last;
      (tried ??= new Set()).add(s.up.index);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.probing?.catch(() => undefined);
    this.registry.remove(this.healthyGauge);
    await Promise.all(this.states.map((s) => s.up.close()));
  }

  private pick(exclude: ReadonlySet<number> | undefined, needWs: boolean): State | undefined {
    const n = this.states.length;
    let best: State | undefined;
    const start = this.rr++ % n;
    for (let k = 0; k < n; k++) {
      const s = this.states[(start + k) % n]!;
      if (!s.healthy || exclude?.has(s.up.index) === true || (needWs && s.up.endpoint.ws === undefined)) continue;
      if (best === undefined || s.up.inflight < best.up.inflight) best = s;
    }
    return best;
  }

  private async probeOne(s: State): Promise<ProbeResult> {
    const call: ProbeCall = async (body) => {
      const r = await s.up.post(body, this.probeTimeoutMs);
      if (!r.ok) throw new Error(`probe ${r.why}`);
      if (r.status !== 200) throw new Error(`probe HTTP ${r.status}`);
      return JSON.parse(r.body.toString('utf8')) as unknown;
    };
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<ProbeResult>((r) => (timer = setTimeout(() => r({ ok: false, why: 'probe timed out' }), this.probeTimeoutMs)));
    try {
      return await Promise.race([this.opts.probe(call, { index: s.up.index }).catch((e: unknown) => ({ ok: false, why: (e as Error).message })), deadline]);
    } finally {
      clearTimeout(timer);
    }
  }

  private async probeAll(): Promise<void> {
    const results = await Promise.all(this.states.map((s) => this.probeOne(s)));
    let best = Number.NEGATIVE_INFINITY;
    for (const r of results) if (r.ok && r.height !== undefined && r.height > best) best = r.height;
    results.forEach((r, i) => {
      const s = this.states[i]!;
      let ok = r.ok;
      let why = r.why;
      if (ok && r.height !== undefined && best - r.height > this.maxLag) {
        ok = false;
        why = `lagging ${best - r.height} behind the best upstream`;
      }
      s.height = r.height;
      if (ok !== s.healthy) {
        if (ok) this.opts.log.info({ upstream: s.up.name, height: r.height }, 'upstream healthy');
        else this.opts.log.warn({ upstream: s.up.name, why }, 'upstream unhealthy');
      }
      s.healthy = ok;
      s.lastWhy = ok ? undefined : why;
    });
  }
}

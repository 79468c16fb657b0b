import type { Log } from '../../infra/base/log';
import type { SubmitMetrics } from './metrics';
import type { Route, RouteOutcome } from './route';

// Forwarding behind one small seam. The contract: the service answers once the forward is dispatched, and
// no transport ever reports what happens to it afterwards. So forward() only dispatches (or says it could
// not, when every route is at its in-flight cap); outcomes become per-route metrics, rate-limited log lines
// and, through the opening's report, the transaction's trace.

/** What became of one route's attempt: `skipped` = the route was at its in-flight cap and was not tried. */
export type ForwardReport = (route: string, outcome: RouteOutcome | 'skipped') => void;

/**
 * What a dispatched transaction opens (its trace). The forwarder calls open() once, as soon as a route has
 * taken the transaction and before any report; never when no route took it, since then the transaction was
 * not accepted and must leave no trace.
 */
export interface ForwardOpening {
  open(): ForwardReport;
}

export interface Forwarder {
  /** Dispatches the serialized transaction; false when no route could take it (all at their caps). */
  forward(tx: Buffer, opening?: ForwardOpening): boolean;
  close(): Promise<void>;
}

export interface RouteForwarderOptions {
  routes: Route[];
  log: Log;
  metrics: SubmitMetrics;
}

const WARN_EVERY_MS = 10_000;

/** Every route gets every transaction, in parallel. */
export class RouteForwarder implements Forwarder {
  private lastWarn = 0;

  constructor(private readonly opts: RouteForwarderOptions) {
    if (opts.routes.length === 0) throw new Error('forwarder: at least one route is required');
    if (new Set(opts.routes.map((r) => r.name)).size !== opts.routes.length) throw new Error('forwarder: route names must be unique');
    for (const r of opts.routes) opts.metrics.route(r.name); // every series from the start
  }

  forward(tx: Buffer, opening?: ForwardOpening): boolean {
    const routes = this.opts.routes;
    let sent = false;
    let report: ForwardReport | undefined;
    for (let i = 0; i < routes.length; i++) {
      const r = routes[i]!;
      const m = this.opts.metrics.route(r.name);
      const p = r.send(tx);
      if (p === null) {
        this.opts.metrics.forwardDropped.inc();
        m.skipped.inc();
        report?.(r.name, 'skipped');
        continue;
      }
      if (!sent) {
        // The first route that took it: the trace opens now, and the routes before this one were all skipped.
        sent = true;
        report = opening?.open();
        if (report !== undefined) for (let j = 0; j < i; j++) report(routes[j]!.name, 'skipped');
      }
      this.opts.metrics.forwarded.inc();
      m.attempts.inc();
      void p.then((o) => {
        if (!o.ok) this.failed(r.name, o.error);
        report?.(r.name, o);
      });
    }
    return sent;
  }

  private failed(route: string, what: string): void {
    this.opts.metrics.forwardErrors.inc();
    this.opts.metrics.route(route).errors.inc();
    const now = Date.now();
    if (now - this.lastWarn >= WARN_EVERY_MS) {
      this.lastWarn = now;
      this.opts.log.warn({ route, error: what }, 'forward to upstream failed (not reported to clients; counted)');
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.opts.routes.map((r) => r.close()));
  }
}

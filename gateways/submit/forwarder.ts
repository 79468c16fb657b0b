import { Pool } from 'undici';
import type { Log } from '../../infra/base/log';
import type { SubmitMetrics } from './metrics';

// Forwarding behind one small seam. The contract: the service answers once the forward is dispatched, and
// no transport ever reports what happens to it afterwards. So forward() only dispatches (or says it could
// not, when every target is at its in-flight cap) and outcomes become metrics and rate-limited log lines.

export interface Forwarder {
  /** Dispatches the serialized transaction; false when no target could take it (all at their caps). */
  forward(tx: Buffer): boolean;
  close(): Promise<void>;
}

export interface RpcForwarderOptions {
  /** Upstream chain RPC URLs (each gets every transaction, in parallel). Never logged: a URL may hold a credential. */
  targets: string[];
  connectionsPerTarget?: number;
  /** Requests in flight per target at most; past it that target skips the transaction (counted). */
  maxInFlightPerTarget?: number;
  timeoutMs?: number;
  log: Log;
  metrics: SubmitMetrics;
}

interface Target {
  index: number;
  pool: Pool;
  path: string;
  inFlight: number;
}

const WARN_EVERY_MS = 10_000;

/**
 * `sendTransaction` with skipPreflight and maxRetries 0 on the upstream chain RPC, over keep-alive undici pools.
 * No retries here either (undici's Pool does not retry a request): re-driving is the client's choice.
 */
export class RpcForwarder implements Forwarder {
  private readonly targets: Target[];
  private readonly maxInFlight: number;
  private lastWarn = 0;

  constructor(private readonly opts: RpcForwarderOptions) {
    if (opts.targets.length === 0) throw new Error('forwarder: at least one target is required');
    const timeout = opts.timeoutMs ?? 5_000;
    this.maxInFlight = opts.maxInFlightPerTarget ?? 1_024;
    this.targets = opts.targets.map((t, index) => {
      const u = new URL(t);
      return {
        index,
        path: `${u.pathname}${u.search}`,
        inFlight: 0,
        pool: new Pool(u.origin, { connections: opts.connectionsPerTarget ?? 16, keepAliveTimeout: 30_000, headersTimeout: timeout, bodyTimeout: timeout }),
      };
    });
  }

  forward(tx: Buffer): boolean {
    let body: string | null = null;
    let sent = false;
    for (const t of this.targets) {
      if (t.inFlight >= this.maxInFlight) {
        this.opts.metrics.forwardDropped.inc();
        continue;
      }
      body ??= `{"jsonrpc":"2.0","id":1,"method":"sendTransaction","params":["${tx.toString('base64')}",{"encoding":"base64","skipPreflight":true,"maxRetries":0}]}`;
      t.inFlight++;
      sent = true;
      this.opts.metrics.forwarded.inc();
      void this.send(t, body);
    }
    return sent;
  }

  private async send(t: Target, body: string): Promise<void> {
    try {
      const res = await t.pool.request({ path: t.path, method: 'POST', headers: { 'content-type': 'application/json' }, body });
      const text = await res.body.text();
      if (res.statusCode !== 200 || text.includes('"error"')) this.failed(t, res.statusCode === 200 ? 'rpc error' : `http ${res.statusCode}`);
    } catch (e) {
      this.failed(t, (e as Error).name);
    } finally {
      t.inFlight--;
    }
  }

  private failed(t: Target, what: string): void {
    this.opts.metrics.forwardErrors.inc();
    const now = Date.now();
    if (now - this.lastWarn >= WARN_EVERY_MS) {
      this.lastWarn = now;
      this.opts.log.warn({ target: t.index, error: what }, 'forward to upstream failed (not reported to clients; counted)');
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.targets.map((t) => t.pool.close().catch(() => undefined)));
  }
}

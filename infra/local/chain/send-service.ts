import bs58 from 'bs58';
import type { TxFields } from '../../../proto/tx-fields';
import type { Chain } from './chain';
import { MAX_BLOCKHASH_AGE } from './ledger';
import { leaderAt, type LeaderRotation } from './methods/cluster';

// The multi-leader run's forward hop: what an RPC node's `sendTransaction` does with a transaction once it has
// passed preflight — Agave's SendTransactionService (rpc/send-transaction-service). The transaction goes at once
// to the TPU of the leaders of the current and next leader windows (leader_forward_count 2), over QUIC through the
// hop the node was given (a solana-tpu-client-next client, as Agave's own service runs), and into a retry pool:
// every retry_rate (2 s) a transaction the working bank does not know yet is sent again, until it lands (its
// status is known: ok = kept until rooted, err = dropped), its blockhash expires (last valid block height below
// the root's), or it used up its retries (the request's maxRetries, default unbounded). The pool holds at most
// 10,000 (MAX_TRANSACTION_RETRY_POOL_SIZE); past that a transaction is still sent once, not retried.
// The node never executes what it was sent: only what reaches a leader's TPU lands (tpu-intake.ts).
//
// Constants from Agave's send_transaction_service.rs (DEFAULT_RETRY_RATE_MS, DEFAULT_LEADER_FORWARD_COUNT,
// MAX_TRANSACTION_RETRY_POOL_SIZE; DEFAULT_SERVICE_MAX_RETRIES = usize::MAX).

export const RETRY_RATE_MS = 2_000;
export const LEADER_FORWARD_COUNT = 2;
export const MAX_RETRY_POOL = 10_000;

/** Where the node's forwards go: a QUIC TPU client. `tpus` are "ip:port" TPU QUIC addresses. */
export interface TpuHop {
  send(raw: Buffer, tpus: readonly string[]): void;
}

export interface SendServiceOptions {
  retryRateMs?: number;
  leaderForwardCount?: number;
  maxRetryPool?: number;
}

/** What the service did, as Agave's SendTransactionServiceStats counts it. */
export interface SendServiceCounts {
  received: number;
  /** Hand-overs to the hop (first sends and retries). */
  sent: number;
  retried: number;
  rooted: number;
  expired: number;
  failed: number;
  maxRetriesElapsed: number;
  /** Not retried: the pool was full. */
  poolFull: number;
  /** Not sent at all: no leader of the next windows has a TPU QUIC address. */
  noLeader: number;
}

interface Pending {
  raw: Buffer;
  lastValidBlockHeight: number;
  maxRetries: number;
  retries: number;
  lastSentMs: number;
}

const TPU_ADDR = /^\d{1,3}(\.\d{1,3}){3}:\d{1,5}$/;

export class SendTransactionService {
  private readonly pool = new Map<string, Pending>();
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  private readonly retryRateMs: number;
  private readonly forwardCount: number;
  private readonly maxPool: number;
  readonly counts: SendServiceCounts = { received: 0, sent: 0, retried: 0, rooted: 0, expired: 0, failed: 0, maxRetriesElapsed: 0, poolFull: 0, noLeader: 0 };

  constructor(
    private readonly chain: Chain,
    private readonly r: LeaderRotation,
    private readonly hop: TpuHop,
    o: SendServiceOptions = {},
  ) {
    this.retryRateMs = o.retryRateMs ?? RETRY_RATE_MS;
    this.forwardCount = o.leaderForwardCount ?? LEADER_FORWARD_COUNT;
    this.maxPool = o.maxRetryPool ?? MAX_RETRY_POOL;
  }

  /** A transaction that passed the node's checks; `maxRetries` as the request gave it (undefined = unbounded). */
  submit(raw: Buffer, tx: TxFields, maxRetries: number | undefined): void {
    if (this.closed) return;
    this.counts.received++;
    const signature = bs58.encode(tx.signatures[0]!);
    if (this.pool.has(signature)) return; // Agave: an entry already in the pool is kept as it is
    const h = this.chain.ledger.blockhashHeight(bs58.encode(tx.recentBlockhash));
    // A blockhash the node does not know (a durable nonce, or skipPreflight with a stale hash): Agave's fallback
    // timeout, the working bank's height + MAX_PROCESSING_AGE.
    const lastValidBlockHeight = (h ?? this.chain.blockHeight) + MAX_BLOCKHASH_AGE;
    this.send(raw);
    if (this.pool.size >= this.maxPool) {
      this.counts.poolFull++;
      return;
    }
    this.pool.set(signature, { raw, lastValidBlockHeight, maxRetries: maxRetries ?? Number.MAX_SAFE_INTEGER, retries: 0, lastSentMs: Date.now() });
    this.arm();
  }

  /** Transactions in the retry pool. */
  size(): number {
    return this.pool.size;
  }

  close(): void {
    this.closed = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.pool.clear();
  }

  /** The TPU QUIC addresses of the leaders of the current and next windows (each leader once), as get_leader_tpus. */
  leaderTpus(slot: number): string[] {
    const w = this.r.windowSlots;
    const out: string[] = [];
    for (let k = 0; k < this.forwardCount; k++) {
      const id = leaderAt(this.r, slot + k * w);
      const spec = this.r.leaders.find((l) => l.identity === id);
      const addr = spec?.tpuQuic;
      if (typeof addr === 'string' && TPU_ADDR.test(addr) && !out.includes(addr)) out.push(addr);
    }
    return out;
  }

  private send(raw: Buffer): void {
    const tpus = this.leaderTpus(this.chain.slot);
    if (tpus.length === 0) {
      this.counts.noLeader++;
      return;
    }
    this.counts.sent++;
    this.hop.send(raw, tpus);
  }

  /** The retry loop wakes when the oldest send is due again (Agave's retry task sleeps the same way). */
  private arm(): void {
    if (this.timer !== null || this.closed || this.pool.size === 0) return;
    let oldest = Infinity;
    for (const p of this.pool.values()) if (p.lastSentMs < oldest) oldest = p.lastSentMs;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.process();
      this.arm();
    }, Math.max(10, oldest + this.retryRateMs - Date.now()));
    this.timer.unref();
  }

  /** One pass over the pool: Agave's process_transactions. */
  private process(): void {
    const now = Date.now();
    const rootHeight = this.chain.ledger.latest?.blockHeight ?? 0;
    for (const [sig, p] of this.pool) {
      const rec = this.chain.ledger.tx(sig);
      if (rec?.frozen === true) {
        this.counts.rooted++;
        this.pool.delete(sig);
        continue;
      }
      if (p.lastValidBlockHeight < rootHeight) {
        this.counts.expired++;
        this.pool.delete(sig);
        continue;
      }
      if (p.retries >= p.maxRetries) {
        this.counts.maxRetriesElapsed++;
        this.pool.delete(sig);
        continue;
      }
      if (rec !== undefined) {
        // Processed in the working slot: failed ones are dropped, the others kept until rooted.
        if (rec.meta.err !== null) {
          this.counts.failed++;
          this.pool.delete(sig);
        }
        continue;
      }
      if (now - p.lastSentMs < this.retryRateMs) continue;
      p.retries++;
      this.counts.retried++;
      p.lastSentMs = now;
      this.send(p.raw);
      if (p.retries >= p.maxRetries) {
        this.counts.maxRetriesElapsed++;
        this.pool.delete(sig);
      }
    }
  }
}

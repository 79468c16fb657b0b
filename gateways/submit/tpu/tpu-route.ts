import type { Log } from '../../../infra/base/log';
import type { TpuConfig } from '../config';
import type { Route, RouteOutcome } from '../route';
import { LeaderTracker } from './leader-tracker';
import type { LeaderWindow } from './leader-schedule';
import { encodeConnect, encodeTx, type Dispatch, type SenderMessage } from './sender-codec';
import { SenderProcess } from './sender-process';
import type { TpuMetrics } from './tpu-metrics';

// The `tpu` route: every transaction straight to the TPU of the leaders of the next windows, over QUIC, through
// Agave's own client (the sender process). Every decision is taken here and is visible: which leaders (the
// schedule's next `sendFanout` windows with a usable address), which connections to open ahead (`connectFanout`
// windows, on every change of the windows), and per transaction what the sender did for each leader (its RESULT),
// which becomes the trace's `forward` step (with the leaders' identities) and the per-leader metrics.
//
// Never a stall: send() answers synchronously with null (the forwarder counts the route skipped, the RPC routes
// still carry the transaction) when the slot or schedule is unknown, no leader of the next windows has a usable
// address, the sender is down, or `maxInFlight` transactions await their RESULT. A leader whose queue is full or
// whose worker died costs that leader a counter; the other leaders still get the transaction. A transaction is
// handed over once, at acceptance; the client's workers drop a batch older than a blockhash's life (150 slots)
// rather than send it late, and nothing here re-sends.

/** The `gateways.submit.tpu` section as parsed, with what the service resolved for it. */
export interface TpuRouteOptions extends Omit<TpuConfig, 'rpcUrl' | 'wsUrl' | 'senderBinary'> {
  bin: string;
  rpcUrl: string;
  wsUrl: string | null;
  log: Log;
  metrics: TpuMetrics;
}

interface Pending {
  resolve: (o: RouteOutcome) => void;
  start: number;
  leaders: string[];
}

const DISPATCH_ERROR: Record<Exclude<Dispatch, 'queued'>, string> = { full: 'leader queue full', gone: 'leader unreachable', bad_address: 'bad leader address' };

export class TpuRoute implements Route {
  readonly name = 'tpu';
  readonly tracker: LeaderTracker;
  private readonly sender: SenderProcess;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private lastConnect = '';
  identity: { identity: string; ephemeral: boolean } | null = null;

  constructor(private readonly o: TpuRouteOptions) {
    this.tracker = new LeaderTracker({
      rpcUrl: o.rpcUrl,
      wsUrl: o.wsUrl,
      scheduleSlots: o.scheduleSlots,
      nodesRefreshMs: o.nodesRefreshMs,
      timeoutMs: o.timeoutMs,
      log: o.log,
      metrics: o.metrics,
      onChange: () => this.preconnect(),
    });
    const args = ['--max-connections', String(o.maxConnections), '--worker-channel', String(o.workerQueue), '--reconnects', String(o.reconnects), '--stats-ms', String(o.statsIntervalMs), '--bind', o.bind];
    if (o.identityFile !== undefined) args.push('--identity', o.identityFile);
    this.sender = new SenderProcess({
      bin: o.bin,
      args,
      log: o.log,
      onMessage: (m) => this.onMessage(m),
      onExit: () => this.failAll('sender exited'),
      onRestart: () => {
        o.metrics.senderRestarts.inc();
        this.lastConnect = '';
      },
    });
  }

  async start(): Promise<void> {
    this.identity = await this.sender.start();
    if (this.identity.ephemeral) this.o.log.warn({ identity: this.identity.identity }, 'tpu route: no identity file (gateways.submit.tpu.identityFile): sending with an ephemeral, unstaked identity');
    else this.o.log.info({ identity: this.identity.identity }, 'tpu route: sending as this identity');
    await this.tracker.start();
  }

  /** The leaders the next transaction would go to (tests, /health): the schedule's next send windows. */
  targets(): LeaderWindow[] | null {
    return this.tracker.schedule.windows(this.o.sendFanout);
  }

  send(tx: Buffer): Promise<RouteOutcome> | null {
    const m = this.o.metrics;
    if (!this.sender.ready) return m.notRouted('sender_down'), null;
    if (this.pending.size >= this.o.maxInFlight) return m.notRouted('in_flight_cap'), null;
    const windows = this.tracker.schedule.windows(this.o.sendFanout);
    if (windows === null) return m.notRouted(this.tracker.schedule.currentSlot() === null ? 'no_slot' : 'no_schedule'), null;
    const leaders: string[] = [];
    const addrs: string[] = [];
    for (const w of windows) {
      if (w.tpu === null) {
        m.windowsSkipped.inc();
        this.tracker.missed();
      } else if (!addrs.includes(w.tpu)) {
        leaders.push(w.identity);
        addrs.push(w.tpu);
      }
    }
    if (addrs.length === 0) return m.notRouted('no_address'), null;
    const id = this.nextId;
    this.nextId = this.nextId >= 0xffff_ffff ? 1 : this.nextId + 1;
    if (!this.sender.write(encodeTx(id, addrs, tx))) return m.notRouted('sender_down'), null;
    return new Promise<RouteOutcome>((resolve) => this.pending.set(id, { resolve, start: performance.now(), leaders }));
  }

  /** Opens connections to the leaders of the next `connectFanout` windows ahead of their turn. */
  private preconnect(): void {
    const w = this.tracker.schedule.windows(this.o.connectFanout);
    if (w === null) return;
    const addrs = [...new Set(w.flatMap((x) => (x.tpu === null ? [] : [x.tpu])))];
    const key = addrs.join(',');
    if (key === this.lastConnect || addrs.length === 0) return;
    if (this.sender.write(encodeConnect(addrs))) this.lastConnect = key;
  }

  private onMessage(msg: SenderMessage): void {
    switch (msg.kind) {
      case 'result': {
        const p = this.pending.get(msg.id);
        if (p === undefined) return;
        this.pending.delete(msg.id);
        const ms = performance.now() - p.start;
        const queued: string[] = [];
        let firstError: string | undefined;
        msg.codes.forEach((c, i) => {
          const leader = p.leaders[i];
          if (leader === undefined) return;
          this.o.metrics.leader(leader).dispatch[c].inc();
          if (c === 'queued') queued.push(leader);
          else firstError ??= DISPATCH_ERROR[c];
        });
        p.resolve(queued.length > 0 ? { ok: true, ms, leaders: queued } : { ok: false, error: firstError ?? 'no leader', ms, leaders: p.leaders });
        return;
      }
      case 'stats':
        for (const s of msg.peers) this.o.metrics.peerStats(this.tracker.schedule.identityOf(s.peer) ?? 'unknown', s);
        return;
      case 'error':
        this.o.log.warn({ detail: msg.text.slice(0, 200) }, 'tpu sender reported an error');
        return;
      case 'hello':
        this.lastConnect = '';
        this.preconnect();
        return;
    }
  }

  private failAll(error: string): void {
    for (const [id, p] of this.pending) {
      this.pending.delete(id);
      p.resolve({ ok: false, error, ms: performance.now() - p.start, leaders: p.leaders });
    }
  }

  async close(): Promise<void> {
    this.tracker.close();
    await this.sender.close();
    this.failAll('route closed');
  }
}

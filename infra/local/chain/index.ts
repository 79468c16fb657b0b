import bs58 from 'bs58';
import { splitHostPort } from '../../base/host-port';
import type { Log } from '../../base/log';
import { metrics, type Gauge, type Registry } from '../../base/metrics';
import { Chain, shredVersionOf } from './chain';
import { LOCALCHAIN_DEFAULTS, type LocalChainConfig } from './config';
import { accountMethods } from './methods/accounts';
import { blockMethods } from './methods/blocks';
import { clusterMethods, leaderAt, type LeaderRotation, type LeaderSpec } from './methods/cluster';
import type { Methods } from './methods/common';
import { tokenMethods } from './methods/tokens';
import { transactionMethods, type ForwardToLeaders } from './methods/transactions';
import { PubSub } from './pubsub';
import { startRpcServer } from './rpc/server';
import { ShredSender } from './shred-sender';
import { SendTransactionService, type SendServiceCounts, type SendServiceOptions, type TpuHop } from './send-service';
import { TpuIntake, type TpuIntakeResult } from './tpu-intake';

export type { LeaderSpec } from './methods/cluster';
export type { TpuIntakeResult } from './tpu-intake';
export type { SendServiceCounts, SendServiceOptions, TpuHop } from './send-service';

// The local chain node: a single validator on an in-process SVM (litesvm) behind Solana's JSON-RPC (HTTP) and
// PubSub (WebSocket) on one port, producing 400 ms slots (Alpenglow blocks by default) whose entries (PoH-chained)
// are shredded, signed by the node's identity, and sent as UDP to an ingest port once it is told which: the
// `shredTo` option, or shredTo() on the running node (an ingest that needs the node's RPC to start comes after it).
// For local runs and tests: the upstream every Solana surface of meridian can use unchanged.

export { parseLocalChainConfig, LOCALCHAIN_DEFAULTS, type LocalChainConfig } from './config';

export interface LocalChainOptions extends Partial<Omit<LocalChainConfig, 'enabled'>> {
  /** Default 127.0.0.1. */
  host?: string;
  /** 0 = ephemeral. HTTP JSON-RPC and WebSocket on the same port (ws upgrade). Default 18899. */
  port?: number;
  /** Default 400. */
  slotMs?: number;
  /** "host:port" of an ingest UDP port; absent = don't shred (until shredTo() is called). */
  shredTo?: string;
  /** Default: derived from the genesis hash (agave's compute_shred_version). */
  shredVersion?: number;
  log?: Log;
  /** Where the node's gauges go (meridian_localchain_*); default the process registry. */
  registry?: Registry;
  /** Initial balance of the demo payer; default 1,000,000 SOL. */
  faucetLamports?: bigint;
  /**
   * The multi-leader run: these identities lead in turn, `leaderWindowSlots` (4) slots each, in
   * getSlotLeaders / getLeaderSchedule / getClusterNodes (each with its tpuQuic), and packets their TPU servers
   * hand to executeFromTpu() land in their leader's slots only; sendTransaction executes nothing itself: it
   * forwards to the leaders' TPU through `tpuHop`, with Agave's retries (send-service.ts). Not modelled yet:
   * shreds are still signed by the node's own identity.
   */
  leaders?: LeaderSpec[];
  leaderWindowSlots?: number;
  /** The multi-leader run's QUIC client to the leaders' TPU (required with `leaders`). */
  tpuHop?: TpuHop;
  /** The forward hop's retry settings (Agave's defaults). */
  sendService?: SendServiceOptions;
}

export interface LocalChain {
  httpUrl: string;
  wsUrl: string;
  /** Base58 leader/validator identity (signs shreds; the only leader in getLeaderSchedule). */
  identity: string;
  /** 64-byte secret key (seed ‖ public key) of a funded keypair (local runs only). */
  payer: Uint8Array;
  /** Shred version the node puts on the wire (and reports in getClusterNodes). */
  shredVersion: number;
  genesisHash: string;
  /** The working (processed) slot. */
  slot(): number;
  /**
   * Starts shredding to "host:port" from the next slot on (the first slot shredded is whole). Once only, and
   * not when the shredTo option was given: a node has one shred target.
   */
  shredTo(hostPort: string): void;
  /** Counters for logs, metrics and tests. */
  stats(): LocalChainStats;
  /** 'alpenglow' or 'tower': how the node makes and shreds its blocks. */
  blockFormat: 'tower' | 'alpenglow';
  /** Alpenglow: the id of a recent shredded block (the last 256), as ingest must announce it. */
  blockId(slot: number): Buffer | undefined;
  /** Alpenglow with updateParentEvery: the recent shredded slots whose block has an UpdateParent, with its FEC set. */
  updateParents(): Map<number, number>;
  /** The identity that leads `slot` (the node's own without `leaders`). */
  leaderAt(slot: number): string;
  /** Multi-leader run: a packet `leader`'s TPU received (executed in its slots only; see tpu-intake.ts). */
  executeFromTpu(leader: string, raw: Buffer): TpuIntakeResult;
  /** Multi-leader run: what executeFromTpu did so far. */
  tpuCounts(): Record<TpuIntakeResult, number>;
  /** Multi-leader run: what the forward hop (sendTransaction → leaders' TPU) did so far. */
  sendCounts(): SendServiceCounts;
  close(): Promise<void>;
}

export interface LocalChainStats {
  slot: number;
  transactions: number;
  shredsSent: number;
  shredBatchesSent: number;
  shredSendErrors: number;
  wsConnections: number;
  notificationsSent: number;
  slowSubscribersClosed: number;
}

function urlHost(host: string): string {
  const h = host === '0.0.0.0' || host === '' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return h.includes(':') ? `[${h}]` : h;
}

export async function startLocalChain(o: LocalChainOptions = {}): Promise<LocalChain> {
  const d = LOCALCHAIN_DEFAULTS;
  const host = o.host ?? d.host;
  const chain = new Chain({
    slotMs: o.slotMs ?? d.slotMs,
    ticksPerSlot: o.ticksPerSlot ?? d.ticksPerSlot,
    hashesPerTick: o.hashesPerTick ?? d.hashesPerTick,
    slotsPerEpoch: o.slotsPerEpoch ?? d.slotsPerEpoch,
    entryBatchMs: o.entryBatchMs ?? d.entryBatchMs,
    faucetLamports: o.faucetLamports ?? d.faucetLamports,
    ledgerSlots: Math.max(151, o.ledgerSlots ?? d.ledgerSlots),
    ledgerTransactions: o.ledgerTransactions ?? d.ledgerTransactions,
    log: o.log,
    blockFormat: o.blockFormat ?? d.blockFormat,
    updateParentEvery: o.updateParentEvery ?? d.updateParentEvery,
  });
  const shredVersion = o.shredVersion ?? shredVersionOf(chain.genesisHash);
  // Set at start or later (shredTo()): the stats, gauges and close() read it when they run.
  let shredder = null as ShredSender | null;
  let closed = false;
  const newShredder = (hostPort: string): ShredSender => {
    if (shredder !== null) throw new Error('localchain: already shredding (one shred target per node)');
    const target = splitHostPort(hostPort, '127.0.0.1');
    if (target === null) throw new Error('localchain: shredTo is not HOST:PORT');
    shredder = new ShredSender({ ...target, shredVersion, leaderSeed: chain.identity.seed, genesisRoot: chain.genesisHash, format: o.blockFormat ?? d.blockFormat });
    return shredder;
  };
  if (o.shredTo !== undefined) chain.shredder = newShredder(o.shredTo);
  const pubsub = new PubSub(chain, {
    maxSubscriptionsPerConnection: o.maxSubscriptionsPerConnection ?? d.maxSubscriptionsPerConnection,
    maxSubscriptions: o.maxSubscriptions ?? d.maxSubscriptions,
    maxBufferedBytes: o.maxWsBufferedBytes ?? d.maxWsBufferedBytes,
  });
  // The address getClusterNodes reports is only known once listening; the methods read it lazily.
  const addr = { rpc: '', shredVersion };
  const rotation: LeaderRotation | undefined = o.leaders === undefined || o.leaders.length === 0 ? undefined : { leaders: o.leaders, windowSlots: o.leaderWindowSlots ?? 4 };
  const intake = rotation === undefined ? null : new TpuIntake(chain, rotation);
  if (rotation !== undefined && o.tpuHop === undefined) throw new Error('localchain: the multi-leader run (leaders) needs tpuHop: its sendTransaction forwards to the leaders\' TPU');
  const sender = rotation === undefined ? null : new SendTransactionService(chain, rotation, o.tpuHop!, o.sendService);
  const forward: ForwardToLeaders | undefined = sender === null ? undefined : (raw, tx, maxRetries) => sender.submit(raw, tx, maxRetries);
  const methods: Methods = { ...clusterMethods(chain, addr, rotation), ...accountMethods(chain), ...transactionMethods(chain, forward), ...blockMethods(chain), ...tokenMethods(chain) };
  chain.start();
  let server;
  try {
    server = await startRpcServer(methods, pubsub, {
      host,
      port: o.port ?? d.port,
      maxBodyBytes: o.maxBodyBytes ?? d.maxBodyBytes,
      maxBatch: o.maxBatch ?? d.maxBatch,
      maxConnections: o.maxConnections ?? d.maxConnections,
      maxWsMessageBytes: 64 * 1024,
      log: o.log,
    });
  } catch (e) {
    chain.close();
    await shredder?.close();
    throw e;
  }
  const hostPort = `${urlHost(host)}:${server.port}`;
  addr.rpc = hostPort;
  o.log?.info({ identity: chain.identityB58, port: server.port, slotMs: chain.p.slotMs, shredding: shredder !== null, shredVersion }, 'local chain node started');
  const registry = o.registry ?? metrics;
  const gauges: Gauge[] = [
    registry.gauge('meridian_localchain_slot', 'Working slot of the local chain node', undefined, () => chain.slot),
    registry.gauge('meridian_localchain_transactions_executed', 'Transactions the local chain executed into blocks', undefined, () => chain.transactionsTotal),
    registry.gauge('meridian_localchain_shreds_sent', 'Shreds the local chain sent to its shredTo address', undefined, () => shredder?.shredsSent ?? 0),
    registry.gauge('meridian_localchain_ws_connections', 'Open PubSub WebSocket connections of the local chain', undefined, () => pubsub.connections()),
  ];
  let closing: Promise<void> | null = null;
  return {
    httpUrl: `http://${hostPort}`,
    wsUrl: `ws://${hostPort}`,
    identity: chain.identityB58,
    payer: new Uint8Array(Buffer.concat([chain.payer.seed, chain.payer.publicKey])),
    shredVersion,
    genesisHash: bs58.encode(chain.genesisHash),
    slot: () => chain.slot,
    blockFormat: o.blockFormat ?? d.blockFormat,
    blockId: (slot) => shredder?.blockIds.get(slot),
    updateParents: () => new Map(shredder?.updateParents ?? []),
    leaderAt: (slot) => (rotation === undefined ? chain.identityB58 : leaderAt(rotation, slot)),
    executeFromTpu: (leader, raw) => {
      if (intake === null) throw new Error('localchain: executeFromTpu needs the leaders option (the multi-leader run)');
      return intake.receive(leader, raw);
    },
    tpuCounts: () => ({ ...(intake?.counts ?? { executed: 0, held: 0, dropped: 0, rejected: 0 }) }),
    sendCounts: () => ({ ...(sender?.counts ?? { received: 0, sent: 0, retried: 0, rooted: 0, expired: 0, failed: 0, maxRetriesElapsed: 0, poolFull: 0, noLeader: 0 }) }),
    shredTo: (hostPort) => {
      if (closed) throw new Error('localchain: closed');
      chain.shredFromNextSlot(newShredder(hostPort));
      o.log?.info({ shredTo: hostPort }, 'local chain node shreds from its next slot');
    },
    stats: () => ({
      slot: chain.slot,
      transactions: chain.transactionsTotal,
      shredsSent: shredder?.shredsSent ?? 0,
      shredBatchesSent: shredder?.batchesSent ?? 0,
      shredSendErrors: shredder?.errors ?? 0,
      wsConnections: pubsub.connections(),
      notificationsSent: pubsub.notificationsSent,
      slowSubscribersClosed: pubsub.slowClosed,
    }),
    close: () => {
      closed = true;
      closing ??= (async () => {
        for (const g of gauges) registry.remove(g);
        sender?.close();
        chain.close();
        await server.close();
        await shredder?.close();
        o.log?.info({ slot: chain.slot, transactions: chain.transactionsTotal, shreds: shredder?.shredsSent ?? 0 }, 'local chain node stopped');
      })();
      return closing;
    },
  };
}

import crypto from 'node:crypto';
import dgram from 'node:dgram';
import { encodeBlockMarker } from '../../../ingest/entry/block-component';
import { blockId } from '../../../ingest/entry/block-id';
import { encodeEntryBatch } from '../../../ingest/entry/entries';
import { shredBatch } from '../../../ingest/shred/shredder';
import type { PohEntry } from './poh';

// Shreds the node's entry batches with the project's shredder (chained Merkle sets; the slot's last set
// resigned; signed by the leader identity) and sends each shred as one UDP datagram, as a leader's turbine
// root would. Keeps the slot's next FEC set index and the chained root across batches and slots.
//
// format 'alpenglow' frames each slot as an Alpenglow block (SIMD-0326): a Header (parent slot and the parent's
// block id) at FEC set 0, the node's entry batches, then a Footer (bank hash: the slot's last entry hash, as this
// node has no bank hash to give; producer time; user agent) and one final tick (num_hashes 1) flagged LAST_IN_SLOT,
// each component in sets of its own; it computes every block's id (ingest/entry/block-id.ts) and keeps the last
// 256 in `blockIds`. Not Alpenglow yet: the node's PoH still records its 64 ticks inside the batches (Agave would
// refuse them: TooManyTicks), and no UpdateParent is ever made.

export interface ShredSenderOptions {
  host: string;
  port: number;
  shredVersion: number;
  leaderSeed: Buffer;
  genesisRoot: Buffer;
  /** 'tower' (default): entry batches only. 'alpenglow': Header · batches · Footer · final tick. */
  format?: 'tower' | 'alpenglow';
}

const KEPT_BLOCK_IDS = 256;
const USER_AGENT = Buffer.from('meridian-localchain');

export class ShredSender {
  private readonly socket: dgram.Socket;
  private chainedRoot: Buffer;
  private slot = -1;
  private fec = 0;
  shredsSent = 0;
  batchesSent = 0;
  errors = 0;
  /** Alpenglow: each recent block's id, by slot. */
  readonly blockIds = new Map<number, Buffer>();
  private roots: Buffer[] = [];
  private lastHash: Buffer = Buffer.alloc(32);

  constructor(private readonly o: ShredSenderOptions) {
    this.socket = dgram.createSocket(o.host.includes(':') ? 'udp6' : 'udp4');
    this.socket.on('error', () => this.errors++);
    // Shreds for a loopback ingest leave from loopback too: an unbound socket would bind every interface
    // (0.0.0.0:<ephemeral>) on its first send, and nothing else of a local run listens beyond loopback.
    // Sends made while the bind is under way are queued by node:dgram.
    const loopback = o.host === '::1' || o.host === 'localhost' || o.host.startsWith('127.');
    if (loopback) this.socket.bind(0, o.host === 'localhost' ? '127.0.0.1' : o.host);
    this.chainedRoot = o.genesisRoot;
  }

  send(slot: number, parentSlot: number, entries: PohEntry[], referenceTick: number, lastInSlot: boolean): void {
    const tick = Math.min(63, referenceTick);
    if (this.o.format !== 'alpenglow') {
      if (slot !== this.slot) {
        this.slot = slot;
        this.fec = 0;
      }
      this.component(slot, parentSlot, encodeEntryBatch(entries), tick, lastInSlot);
      return;
    }
    if (slot !== this.slot) {
      this.slot = slot;
      this.fec = 0;
      this.roots = [];
      const parentBlockId = this.blockIds.get(parentSlot) ?? Buffer.alloc(32);
      this.component(slot, parentSlot, encodeBlockMarker({ kind: 'header', byteLen: 0, parentSlot: BigInt(parentSlot), parentBlockId }), 0, false);
    }
    // An empty batch is refused in an Alpenglow block (a zero count must be followed by a marker).
    if (entries.length > 0) {
      this.component(slot, parentSlot, encodeEntryBatch(entries), tick, false);
      this.lastHash = entries[entries.length - 1]!.hash;
    }
    if (!lastInSlot) return;
    const footer = encodeBlockMarker({
      kind: 'footer', byteLen: 0, bankHash: this.lastHash, producerTimeNanos: BigInt(Date.now()) * 1_000_000n, userAgent: USER_AGENT,
      finalCert: null, skipRewardCert: null, notarRewardCert: null,
    });
    this.component(slot, parentSlot, footer, tick, false);
    const finalTick = encodeEntryBatch([{ numHashes: 1n, hash: crypto.createHash('sha256').update(this.lastHash).digest(), txs: [] }]);
    this.component(slot, parentSlot, finalTick, tick, true);
    const parentBlockId = this.blockIds.get(parentSlot) ?? Buffer.alloc(32);
    this.blockIds.set(slot, blockId(this.roots, BigInt(parentSlot), parentBlockId));
    if (this.blockIds.size > KEPT_BLOCK_IDS) this.blockIds.delete(this.blockIds.keys().next().value!);
  }

  /** Shreds one block component (an entry batch or a marker) into sets of its own and sends them. */
  private component(slot: number, parentSlot: number, bytes: Buffer, referenceTick: number, lastInSlot: boolean): void {
    const batch = shredBatch(bytes, {
      slot,
      parentOffset: slot - parentSlot,
      shredVersion: this.o.shredVersion,
      fecSetIndexStart: this.fec,
      chainedRoot: this.chainedRoot,
      leaderSeed32: this.o.leaderSeed,
      referenceTick,
      lastInSlot,
    });
    this.fec = batch.nextFecSetIndex;
    this.chainedRoot = batch.merkleRoots[batch.merkleRoots.length - 1]!;
    if (this.o.format === 'alpenglow') this.roots.push(...batch.merkleRoots);
    for (const s of batch.shreds) this.socket.send(s, this.o.port, this.o.host, (e) => { if (e) this.errors++; });
    this.shredsSent += batch.shreds.length;
    this.batchesSent++;
  }

  /** The local address shreds leave from (undefined before the first send of an unbound socket). */
  localAddress(): { address: string; port: number } | undefined {
    try {
      return this.socket.address();
    } catch {
      return undefined;
    }
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.socket.close(() => resolve()));
  }
}

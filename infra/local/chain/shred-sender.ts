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
// block id) at FEC set 0, the node's entry batches, then a Footer (bank hash: the block's blockhash, i.e. its final
// tick's hash, as this node has no bank hash to give; producer time; user agent) and the final tick the node's PoH
// made (one hash, Alpenglow's low-power PoH) flagged LAST_IN_SLOT, each component in sets of its own. It computes
// every block's id (ingest/entry/block-id.ts) and keeps the last 256 in `blockIds`.
//
// Fast leader handover (SIMD-0337), when the node asks for it (planHandover, then updateParent mid-slot): the
// header names a version of the parent slot that the leader then abandons (a block id nobody finalized, derived
// from the real one: one slot, two versions, as an equivocating previous leader makes), and the UpdateParent names
// the real parent block at an FEC-set boundary; the block id's parent is the UpdateParent's.

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
const ABANDONED = Buffer.from('meridian-localchain: the parent version a handover abandons');

/** The other version of a parent block a handover header names (never sent: no one finalizes it). */
export function abandonedVersion(parentBlockId: Buffer): Buffer {
  return crypto.createHash('sha256').update(ABANDONED).update(parentBlockId).digest();
}

function keep<V>(m: Map<number, V>, slot: number, v: V): void {
  m.set(slot, v);
  if (m.size > KEPT_BLOCK_IDS) m.delete(m.keys().next().value!);
}

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
  /** The parent the block is replayed on: the header's, then the UpdateParent's. */
  private blockParent: { slot: number; id: Buffer } = { slot: 0, id: Buffer.alloc(32) };
  private handoverSlot = -1;
  /** Alpenglow: the slots whose block has an UpdateParent, by slot, with the FEC set it starts (the last 256). */
  readonly updateParents = new Map<number, number>();

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
      this.blockParent = { slot: parentSlot, id: parentBlockId };
      const named = slot === this.handoverSlot ? abandonedVersion(parentBlockId) : parentBlockId;
      this.component(slot, parentSlot, encodeBlockMarker({ kind: 'header', byteLen: 0, parentSlot: BigInt(parentSlot), parentBlockId: named }), 0, false);
    }
    // The final tick is the block's last component, after the footer; the batches before it hold no tick.
    const finalTick = lastInSlot ? entries[entries.length - 1] : undefined;
    if (lastInSlot && (finalTick === undefined || finalTick.txs.length !== 0)) throw new Error(`alpenglow slot ${slot}: the last entry must be the block's final tick`);
    const body = lastInSlot ? entries.slice(0, -1) : entries;
    // An empty batch is refused in an Alpenglow block (a zero count must be followed by a marker).
    if (body.length > 0) this.component(slot, parentSlot, encodeEntryBatch(body), tick, false);
    if (!lastInSlot) return;
    const footer = encodeBlockMarker({
      kind: 'footer', byteLen: 0, bankHash: finalTick!.hash, producerTimeNanos: BigInt(Date.now()) * 1_000_000n, userAgent: USER_AGENT,
      finalCert: null, skipRewardCert: null, notarRewardCert: null,
    });
    this.component(slot, parentSlot, footer, tick, false);
    this.component(slot, parentSlot, encodeEntryBatch([finalTick!]), tick, true);
    keep(this.blockIds, slot, blockId(this.roots, BigInt(this.blockParent.slot), this.blockParent.id));
  }

  /** The next block of `slot` is a handover: its header names an abandoned version of the parent (see above). */
  planHandover(slot: number): void {
    this.handoverSlot = slot;
  }

  /**
   * An UpdateParent in the block being sent, at the next FEC-set boundary, naming `parentSlot`'s real block: every
   * transaction sent before it in this block is discarded by the chain. Alpenglow only, after the block's header.
   */
  updateParent(slot: number, parentSlot: number, referenceTick: number): void {
    if (this.o.format !== 'alpenglow' || slot !== this.slot) throw new Error(`UpdateParent for slot ${slot}: not an Alpenglow block under way`);
    const id = this.blockIds.get(parentSlot) ?? Buffer.alloc(32);
    keep(this.updateParents, slot, this.fec);
    this.component(slot, parentSlot, encodeBlockMarker({ kind: 'update_parent', byteLen: 0, parentSlot: BigInt(parentSlot), parentBlockId: id }), Math.min(63, referenceTick), false);
    this.blockParent = { slot: parentSlot, id };
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

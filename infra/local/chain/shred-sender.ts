import dgram from 'node:dgram';
import { encodeEntryBatch } from '../../../ingest/entry/entries';
import { shredBatch } from '../../../ingest/shred/shredder';
import type { PohEntry } from './poh';

// Shreds the node's entry batches with the project's shredder (chained Merkle sets; the slot's last set
// resigned; signed by the leader identity) and sends each shred as one UDP datagram, as a leader's turbine
// root would. Keeps the slot's next FEC set index and the chained root across batches and slots.

export interface ShredSenderOptions {
  host: string;
  port: number;
  shredVersion: number;
  leaderSeed: Buffer;
  genesisRoot: Buffer;
}

export class ShredSender {
  private readonly socket: dgram.Socket;
  private chainedRoot: Buffer;
  private slot = -1;
  private fec = 0;
  shredsSent = 0;
  batchesSent = 0;
  errors = 0;

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
    if (slot !== this.slot) {
      this.slot = slot;
      this.fec = 0;
    }
    const batch = shredBatch(encodeEntryBatch(entries), {
      slot,
      parentOffset: slot - parentSlot,
      shredVersion: this.o.shredVersion,
      fecSetIndexStart: this.fec,
      chainedRoot: this.chainedRoot,
      leaderSeed32: this.o.leaderSeed,
      referenceTick: Math.min(63, referenceTick),
      lastInSlot,
    });
    this.fec = batch.nextFecSetIndex;
    this.chainedRoot = batch.merkleRoots[batch.merkleRoots.length - 1]!;
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

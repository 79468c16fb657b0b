import crypto from 'node:crypto';
import dgram from 'node:dgram';
import bs58 from 'bs58';
import { shredBatch } from '../../ingest/shred/shredder';
import { splitHostPort } from '../host-port';
import { randomKeypair, type Keypair } from '../keys';
import type { Log } from '../log';
import type { DemoConfig } from './config';
import { entriesBincode, signedTransfer } from './transfers';

// Demo traffic for the one-command local run: every slotMs, a slot of real signed transfers from a few demo
// payers, shredded by our own shredder (signed by a demo leader) and sent as UDP to the local ingest port —
// the same path a real shred feed takes.

export interface DemoTraffic {
  /** Base58 public keys of the demo payers: subscribe to one of them to see its transfers. */
  accounts: string[];
  close(): Promise<void>;
}

const ENTRIES_PER_SLOT = 4;

export async function startDemoTraffic(cfg: DemoConfig, ingestHostPort: string, log: Log): Promise<DemoTraffic> {
  const target = splitHostPort(ingestHostPort, '127.0.0.1');
  if (target === null) throw new Error(`demo traffic: ingest address is not HOST:PORT`);
  const { host, port } = target;
  const leader = randomKeypair();
  const payers: Keypair[] = Array.from({ length: cfg.accounts }, () => randomKeypair());
  const socket = dgram.createSocket(host.includes(':') ? 'udp6' : 'udp4');
  await new Promise<void>((resolve) => socket.bind(0, resolve));

  let slot = 1_000n;
  let chainedRoot: Buffer = crypto.randomBytes(32);
  let lamports = 1_000n;
  let sentSlots = 0;

  const sendSlot = (): void => {
    const perEntry = Math.max(1, Math.ceil(cfg.txPerSlot / ENTRIES_PER_SLOT));
    const entries: Array<{ numHashes: bigint; hash: Buffer; txs: Buffer[] }> = [];
    for (let made = 0; made < cfg.txPerSlot; made += perEntry) {
      const txs: Buffer[] = [];
      for (let i = 0; i < perEntry && made + i < cfg.txPerSlot; i++) {
        const payer = payers[(made + i) % payers.length]!;
        txs.push(signedTransfer(payer, crypto.randomBytes(32), lamports++));
      }
      entries.push({ numHashes: 12_500n, hash: crypto.randomBytes(32), txs });
    }
    const batch = shredBatch(entriesBincode(entries), {
      slot,
      parentOffset: 1,
      shredVersion: 0,
      fecSetIndexStart: 0,
      chainedRoot,
      leaderSeed32: leader.seed,
      lastInSlot: true,
    });
    chainedRoot = batch.merkleRoots[batch.merkleRoots.length - 1]!;
    for (const shred of batch.shreds) socket.send(shred, port, host);
    slot++;
    sentSlots++;
  };

  const timer = setInterval(() => {
    try {
      sendSlot();
    } catch (e) {
      log.warn({ err: e }, 'demo slot not sent');
    }
  }, cfg.slotMs);
  const accounts = payers.map((p) => bs58.encode(p.publicKey));
  log.info({ accounts, txPerSlot: cfg.txPerSlot, slotMs: cfg.slotMs }, 'demo traffic: shredding signed transfers into ingest');

  return {
    accounts,
    close: async () => {
      clearInterval(timer);
      log.info({ slots: sentSlots }, 'demo traffic stopped');
      await new Promise<void>((resolve) => socket.close(() => resolve()));
    },
  };
}

import crypto from 'node:crypto';
import { EventEmitter } from 'node:events';
import bs58 from 'bs58';
import { decodeTransaction } from '../../../proto/txn/decode';
import type { TxFields } from '../../../proto/tx-fields';
import { keypairFromSeed, randomKeypair, type Keypair } from '../../base/keypair';
import type { Log } from '../../base/log';
import { b58, Ledger, MAX_BLOCKHASH_AGE, type Block, type TxRecord } from './ledger';
import { Poh, type PohEntry } from './poh';
import type { ShredSender } from './shred-sender';
import { Bank, type SimResult } from './svm';
import { transferTx } from './system-tx';
import { nodeError, type TxError } from './tx-error';

// The single validator: a slot clock drives a working bank (litesvm) and a PoH recorder. Transactions execute
// the moment they arrive, in arrival order, and are recorded into entries between the slot's ticks by arrival
// time. While a slot runs, its recorded entries are flushed as entry batches every entryBatchMs (and shredded
// when a ShredSender is attached); at the slot's end the remaining ticks close it, the last batch says
// LAST_IN_SLOT, the block freezes, and the next slot starts. The only leader is the node's identity.
// Commitment: processed = executed in the working slot; confirmed and finalized = its block frozen (one node,
// nobody else votes, every frozen block is rooted).
//
// blockFormat 'alpenglow' (the default): PoH in Alpenglow's low-power mode, as Agave's replay requires of an
// Alpenglow block (blockstore_processor.rs verify_ticks: every entry num_hashes 1, one tick, at the very end): no
// ticks between the transactions, the block's one tick made at its end, whose hash is the blockhash. 'tower': the
// tower-era PoH, ticksPerSlot ticks of hashesPerTick hashes with the entries between them.
//
// updateParentEvery = N > 0 (Alpenglow): the first slot of every Nth leader window is a fast leader handover
// (SIMD-0337). Its block starts on an abandoned version of the parent (shred-sender.ts); at half the slot the
// leader sends an UpdateParent naming the real parent and the bank restarts from the parent (PoH from the parent's
// blockhash), so everything recorded before it is discarded by the chain. Before the UpdateParent the block holds
// the transactions that arrived so far and one transfer the node signs but never executes (a discarded transaction
// that never comes back); after it, the same transactions again (re-included: each was executed once, into this
// slot, and getBlock lists it once), then the rest of the slot.

export interface ChainParams {
  slotMs: number;
  ticksPerSlot: number;
  hashesPerTick: number;
  slotsPerEpoch: number;
  entryBatchMs: number;
  faucetLamports: bigint;
  ledgerSlots: number;
  ledgerTransactions: number;
  log?: Log;
  identitySeed?: Buffer;
  /** Default 'tower' here; the local chain's config defaults to 'alpenglow'. */
  blockFormat?: 'tower' | 'alpenglow';
  /** Alpenglow: an UpdateParent in the first slot of every Nth leader window; 0 = never. */
  updateParentEvery?: number;
}

/** Agave's NUM_CONSECUTIVE_LEADER_SLOTS: an UpdateParent is valid in a leader window's first slot only. */
const LEADER_WINDOW = 4;

interface Handover {
  /** The chain's own transfer that is recorded before the UpdateParent and never executed (null once recorded). */
  discard: { raw: Buffer; signatures: Buffer[] } | null;
  /** Transactions recorded before the UpdateParent: recorded again after it. */
  prefix: TxRecord[];
}

/** Entries hold at most this many transactions (the banking stage's batch size). */
const MAX_TXS_PER_ENTRY = 64;
const FAUCET_LAMPORTS = 10n ** 17n;
const SYSTEM_PROGRAM = Buffer.alloc(32);
/** System instruction 4; nonce account (80 bytes): u32 version | u32 state (1 = initialized) | authority 32 | nonce 32 | fee calculator u64. */
const ADVANCE_NONCE_ACCOUNT = 4;
const NONCE_ACCOUNT_SZ = 80;
const NONCE_STATE_OFF = 4;
const NONCE_INITIALIZED = 1;
const NONCE_VALUE_OFF = 40;

export type SubmitResult = { ok: true; record: TxRecord } | { ok: false; err: TxError; logs: string[]; unitsConsumed: number };

interface Pending {
  record: TxRecord;
  tick: number;
}

export interface ChainEvents {
  slot: [slot: number, parent: number, root: number];
  processed: [record: TxRecord];
  frozen: [block: Block];
}

/** agave's compute_shred_version without hard forks: xor-fold the genesis hash to 16 bits, plus one. */
export function shredVersionOf(genesisHash: Buffer): number {
  let a = 0;
  let b = 0;
  for (let i = 0; i < genesisHash.length; i += 2) {
    a ^= genesisHash[i]!;
    b ^= genesisHash[i + 1] ?? 0;
  }
  return Math.min(0xffff, ((a << 8) | b) + 1);
}

export class Chain extends EventEmitter<ChainEvents> {
  readonly bank: Bank;
  readonly ledger: Ledger;
  readonly identity: Keypair;
  readonly payer: Keypair;
  readonly faucet: Keypair;
  readonly genesisHash: Buffer;
  readonly p: ChainParams;
  /** Set before start(), or through shredFromNextSlot() once the slot clock runs. */
  shredder: ShredSender | null = null;
  private nextShredder: ShredSender | null = null;

  slot = 0;
  parent = 0;
  blockHeight = 0;
  transactionsTotal = 0;
  private poh: Poh;
  private slotStartMs = 0;
  private pending: Pending[] = [];
  private txEntries = 0;
  private maxPerEntry = 0;
  private working: TxRecord[] = [];
  private slotTimer: NodeJS.Timeout | undefined;
  private flushTimer: NodeJS.Timeout | undefined;
  private nextSlotAt = 0;
  private closed = false;
  /** The PoH hash the working slot started from (its parent's blockhash). */
  private slotStartHash: Buffer;
  private handover: Handover | null = null;
  /** Slots made as a handover (an UpdateParent in their block), the last 256. */
  readonly handoverSlots: number[] = [];

  constructor(p: ChainParams) {
    super();
    this.p = p;
    this.bank = new Bank(p.slotsPerEpoch);
    this.ledger = new Ledger({ maxSlots: p.ledgerSlots, maxTransactions: p.ledgerTransactions });
    this.identity = p.identitySeed !== undefined ? keypairFromSeed(p.identitySeed) : randomKeypair();
    this.payer = randomKeypair();
    this.faucet = randomKeypair();
    this.genesisHash = crypto.randomBytes(32);
    this.bank.fund(this.identity.publicKey, 500_000_000_000n);
    this.bank.fund(this.payer.publicKey, p.faucetLamports);
    this.bank.fund(this.faucet.publicKey, FAUCET_LAMPORTS);
    this.poh = new Poh(this.genesisHash, p.hashesPerTick);
    this.slotStartHash = this.genesisHash;
  }

  get alpenglow(): boolean {
    return this.p.blockFormat === 'alpenglow';
  }

  get identityB58(): string {
    return b58(this.identity.publicKey);
  }

  /** Freezes the genesis block (slot 0) and starts the slot clock at slot 1. */
  start(): void {
    this.slotStartMs = Date.now();
    this.bank.setClock(0, this.p.slotsPerEpoch, Math.floor(this.slotStartMs / 1000), Math.floor(this.slotStartMs / 1000));
    this.freezeAndAdvance();
    this.nextSlotAt = this.slotStartMs + this.p.slotMs;
    this.schedule();
  }

  private schedule(): void {
    if (this.closed) return;
    this.slotTimer = setTimeout(() => {
      try {
        this.freezeAndAdvance();
      } catch (e) {
        this.p.log?.error({ err: e, slot: this.slot }, 'local chain: slot failed');
      }
      // Fixed cadence: a late timer shortens the next slot rather than drifting the clock.
      this.nextSlotAt = Math.max(this.nextSlotAt + this.p.slotMs, Date.now() + 1);
      this.schedule();
    }, Math.max(0, this.nextSlotAt - Date.now()));
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.slotTimer);
    clearTimeout(this.flushTimer);
  }

  /**
   * Shreds every slot from the next one on. Not the working slot: its earlier batches were never sent, so its
   * first shreds would claim to start a slot they join in the middle.
   */
  shredFromNextSlot(s: ShredSender): void {
    this.nextShredder = s;
  }

  /** Root slot: the last frozen one. */
  root(): number {
    return this.ledger.latest?.slot ?? 0;
  }

  latestBlockhash(): { blockhash: string; lastValidBlockHeight: number; slot: number } {
    const b = this.ledger.latest!;
    return { blockhash: b.blockhash, lastValidBlockHeight: b.blockHeight + MAX_BLOCKHASH_AGE, slot: b.slot };
  }

  blockhashValid(hash: Buffer | string): boolean {
    const h = this.ledger.blockhashHeight(typeof hash === 'string' ? hash : b58(hash));
    return h !== undefined && this.blockHeight - h <= MAX_BLOCKHASH_AGE;
  }

  /** A recent blockhash of the last 150 blocks, or a durable nonce: first instruction AdvanceNonceAccount on a
   *  nonce account whose stored nonce is the transaction's "blockhash" (agave's check_transaction_age). */
  lifetimeValid(tx: TxFields): boolean {
    if (this.blockhashValid(tx.recentBlockhash)) return true;
    const ix = tx.instructions[0];
    if (ix === undefined || ix.data.length < 4 || ix.data.readUInt32LE(0) !== ADVANCE_NONCE_ACCOUNT || ix.accounts.length === 0) return false;
    if (tx.accountKeys[ix.programIdIndex]?.equals(SYSTEM_PROGRAM) !== true) return false;
    const key = tx.accountKeys[ix.accounts[0]!];
    const a = key === undefined ? null : this.bank.account(key);
    if (a === null || a.data.length < NONCE_ACCOUNT_SZ || !Buffer.from(a.owner).equals(SYSTEM_PROGRAM)) return false;
    const d = Buffer.from(a.data.buffer, a.data.byteOffset, a.data.byteLength);
    return d.readUInt32LE(NONCE_STATE_OFF) === NONCE_INITIALIZED && d.subarray(NONCE_VALUE_OFF, NONCE_VALUE_OFF + 32).equals(tx.recentBlockhash);
  }

  /** Execute now in the working slot. Rejected transactions change nothing and are not recorded. */
  submit(raw: Buffer, tx: TxFields): SubmitResult {
    const signature = b58(tx.signatures[0]!);
    if (this.ledger.tx(signature) !== undefined) return { ok: false, err: nodeError('AlreadyProcessed'), logs: [], unitsConsumed: 0 };
    if (!this.lifetimeValid(tx)) return { ok: false, err: nodeError('BlockhashNotFound'), logs: [], unitsConsumed: 0 };
    const meta = this.bank.execute(raw, tx);
    if (meta.err !== null && !meta.err.lands) return { ok: false, err: meta.err, logs: meta.logs, unitsConsumed: meta.unitsConsumed };
    const keys = [...tx.accountKeys, ...meta.loaded.writable, ...meta.loaded.readonly];
    const nStatic = tx.accountKeys.length;
    const writable = keys.map((_, i) => {
      if (i >= nStatic) return i < nStatic + meta.loaded.writable.length;
      if (i < tx.numRequiredSignatures) return i < tx.numRequiredSignatures - tx.numReadonlySignedAccounts;
      return i < nStatic - tx.numReadonlyUnsignedAccounts;
    });
    const own = ownedWire(raw, tx);
    // Addresses loaded through lookup tables are views of the table account's data as litesvm returned it.
    meta.loaded = { writable: ownedKeys(meta.loaded.writable), readonly: ownedKeys(meta.loaded.readonly) };
    const record: TxRecord = { signature, raw: own.raw, tx: own.tx, slot: this.slot, meta, frozen: false, keys: keys.map(b58), writable };
    this.ledger.addProcessed(record);
    this.working.push(record);
    this.transactionsTotal++;
    this.pending.push({ record, tick: Math.floor((Date.now() - this.slotStartMs) / this.tickMs()) });
    this.flushTimer ??= setTimeout(() => {
      this.flushTimer = undefined;
      this.flush(false);
    }, this.p.entryBatchMs);
    this.emit('processed', record);
    return { ok: true, record };
  }

  simulate(raw: Buffer, tx: TxFields, sigVerify: boolean, accounts = true): SimResult {
    return this.bank.simulate(raw, tx, sigVerify, accounts);
  }

  /** A real transfer from the faucet key, executed and recorded like any other transaction. */
  airdrop(to: Buffer, lamports: bigint): SubmitResult {
    // A local faucet never runs dry: topped up (outside any transaction) when a request would empty it.
    if (this.bank.balance(this.faucet.publicKey) < lamports + 1_000_000n) this.bank.fund(this.faucet.publicKey, FAUCET_LAMPORTS + lamports);
    const raw = transferTx(this.faucet, to, lamports, Buffer.from(bs58.decode(this.ledger.latest!.blockhash)));
    const d = decodeTransaction(raw, BigInt(this.slot));
    if (!d.ok) throw new Error(`faucet transaction does not decode: ${d.reason}`);
    return this.submit(raw, d.tx);
  }

  private tickMs(): number {
    return this.p.slotMs / this.p.ticksPerSlot;
  }

  /** Records pending transactions due by `tick` into entries (non-conflicting groups of up to 64) appended to `out`. */
  private recordPending(tick: number, out: PohEntry[], recorded?: TxRecord[]): void {
    let i = 0;
    while (i < this.pending.length && this.pending[i]!.tick <= tick) {
      const group: TxRecord[] = [];
      const written = new Set<string>();
      const touched = new Set<string>();
      while (i < this.pending.length && this.pending[i]!.tick <= tick && group.length < MAX_TXS_PER_ENTRY) {
        const r = this.pending[i]!.record;
        // Transactions of one entry must not conflict (replay runs them in parallel).
        if (r.keys.some((k, j) => written.has(k) || (r.writable[j] === true && touched.has(k)))) break;
        r.keys.forEach((k, j) => { touched.add(k); if (r.writable[j] === true) written.add(k); });
        group.push(r);
        i++;
      }
      out.push(this.poh.record(group.map((r) => r.raw), group.flatMap((r) => r.tx.signatures)));
      recorded?.push(...group);
      this.txEntries++;
      this.maxPerEntry = Math.max(this.maxPerEntry, group.length);
    }
    this.pending.splice(0, i);
  }

  private shred(entries: PohEntry[], referenceTick: number, final: boolean): void {
    if (this.shredder === null || (entries.length === 0 && !final)) return;
    try {
      this.shredder.send(this.slot, this.parent, entries, referenceTick, final);
    } catch (e) {
      this.p.log?.warn({ err: e, slot: this.slot }, 'local chain: shredding failed');
    }
  }

  /** Records pending transactions into entries between the ticks that are due, then shreds the batch. */
  private flush(final: boolean): PohEntry[] {
    if (this.alpenglow) return this.flushAlpenglow(final);
    const due = final ? this.p.ticksPerSlot : Math.min(this.p.ticksPerSlot - 1, Math.floor((Date.now() - this.slotStartMs) / this.tickMs()));
    const entries: PohEntry[] = [];
    while (this.poh.ticks < due) {
      this.recordPending(this.poh.ticks, entries);
      entries.push(this.poh.tick());
    }
    this.recordPending(Number.MAX_SAFE_INTEGER, entries);
    this.shred(entries, this.poh.ticks, final);
    return entries;
  }

  /** Low-power PoH: transaction entries only, and at the slot's end its one tick (see the header). */
  private flushAlpenglow(final: boolean): PohEntry[] {
    const elapsed = Date.now() - this.slotStartMs;
    const referenceTick = Math.min(this.p.ticksPerSlot - 1, Math.floor(elapsed / this.tickMs()));
    const h = this.handover;
    const entries: PohEntry[] = [];
    if (h !== null && h.discard !== null) {
      entries.push(this.poh.record([h.discard.raw], h.discard.signatures));
      h.discard = null;
    }
    if (h !== null && (final || elapsed >= this.p.slotMs / 2)) {
      // The handover: the abandoned bank's last entries, the UpdateParent, a new bank from the parent's blockhash.
      this.shred(entries, referenceTick, false);
      entries.length = 0;
      try {
        this.shredder?.updateParent(this.slot, this.parent, referenceTick);
      } catch (e) {
        this.p.log?.warn({ err: e, slot: this.slot }, 'local chain: UpdateParent failed');
      }
      this.poh.reset(this.slotStartHash);
      this.pending = [...h.prefix.map((record) => ({ record, tick: 0 })), ...this.pending];
      this.txEntries = 0;
      this.maxPerEntry = 0;
      this.handover = null;
    }
    this.recordPending(Number.MAX_SAFE_INTEGER, entries, this.handover?.prefix);
    if (final) entries.push(this.poh.finalTick());
    this.shred(entries, referenceTick, final);
    return entries;
  }

  private freezeAndAdvance(): void {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    this.flush(true);
    const prev = this.ledger.latest;
    const block: Block = {
      slot: this.slot,
      parentSlot: this.parent,
      blockHeight: this.blockHeight,
      blockhash: b58(this.poh.current()),
      previousBlockhash: prev?.blockhash ?? b58(this.genesisHash),
      blockTime: Math.floor(this.slotStartMs / 1000),
      txs: this.working,
      stats: {
        maxTransactionsPerEntry: this.maxPerEntry,
        numFailedTransactions: this.working.filter((r) => r.meta.err !== null).length,
        numSuccessfulTransactions: this.working.filter((r) => r.meta.err === null).length,
        numTransactionEntries: this.txEntries,
      },
    };
    this.ledger.freeze(block);
    this.bank.pushSlotHash(block.slot, block.blockhash);
    // litesvm's own blockhash is what AdvanceNonceAccount stores: a new one per slot, as a bank has.
    this.bank.svm.expireBlockhash();
    this.emit('frozen', block);
    this.parent = this.slot;
    this.slot++;
    this.blockHeight++;
    this.working = [];
    this.txEntries = 0;
    this.maxPerEntry = 0;
    this.poh.ticks = 0;
    if (this.nextShredder !== null) {
      this.shredder = this.nextShredder;
      this.nextShredder = null;
    }
    this.slotStartHash = Buffer.from(this.poh.current());
    const every = this.p.updateParentEvery ?? 0;
    if (this.alpenglow && every > 0 && this.shredder !== null && this.slot % LEADER_WINDOW === 0 && (this.slot / LEADER_WINDOW) % every === 0) {
      const raw = transferTx(this.faucet, crypto.randomBytes(32), 1n, Buffer.from(bs58.decode(this.ledger.latest!.blockhash)));
      const d = decodeTransaction(raw, BigInt(this.slot));
      this.handover = { discard: d.ok ? { raw, signatures: d.tx.signatures } : null, prefix: [] };
      this.shredder.planHandover(this.slot);
      this.handoverSlots.push(this.slot);
      if (this.handoverSlots.length > 256) this.handoverSlots.shift();
    }
    this.slotStartMs = Date.now();
    const epochStart = this.slotStartMs - (this.slot % this.p.slotsPerEpoch) * this.p.slotMs;
    this.bank.setClock(this.slot, this.p.slotsPerEpoch, Math.floor(this.slotStartMs / 1000), Math.floor(epochStart / 1000));
    this.emit('slot', this.slot, this.parent, this.root());
  }
}

/**
 * The transaction's bytes in an allocation of their own, and its fields decoded from that copy, for the ledger to
 * keep. What arrives is a view: of a pool slab shared with other short-lived buffers (Buffer.from(base64) below
 * 4 KiB, 8 KiB slabs on Node 20, 64 KiB on Node 24) or of a whole datagram; every decoded field is a view of the
 * same memory. A kept view pins all of it for as long as the ledger keeps the transaction (ledgerTransactions).
 */
function ownedWire(raw: Buffer, tx: TxFields): { raw: Buffer; tx: TxFields } {
  if (raw.byteOffset === 0 && raw.buffer.byteLength === raw.length) return { raw, tx };
  const copy = Buffer.allocUnsafeSlow(raw.length);
  raw.copy(copy);
  const d = decodeTransaction(copy, tx.slot);
  return d.ok ? { raw: copy, tx: d.tx } : { raw, tx };
}

/** Keys copied into one allocation of their own (see ownedWire). */
function ownedKeys(keys: Buffer[]): Buffer[] {
  if (keys.length === 0) return keys;
  const all = Buffer.allocUnsafeSlow(keys.reduce((n, k) => n + k.length, 0));
  let at = 0;
  return keys.map((k) => {
    const start = at;
    at += k.copy(all, start);
    return all.subarray(start, at);
  });
}

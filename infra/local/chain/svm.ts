import { Account, Clock, EpochSchedule, FailedTransactionMetadata, LiteSvm, type InnerInstruction, type SlotHashInput, type TransactionMetadata } from 'litesvm/dist/internal';
import type { TxFields } from '../../../proto/tx-fields';
import bs58 from 'bs58';
import { feeOf } from './fees';
import { TOKEN_2022_PROGRAM, TOKEN_PROGRAM, isTokenProgram, readMint, readTokenAccount, uiAmount } from './token';
import { txError, type TxError } from './tx-error';

// The bank: litesvm executes; this adds what a validator's bank reports around execution (balances before and
// after, the fee, loaded lookup-table addresses) and leaves blockhash age and duplicate signatures to the node
// (litesvm knows one blockhash and keeps its own history; the node keeps 150 slots of both, like a validator).

/** Address lookup table account: 56-byte LookupTableMeta, then 32-byte addresses. */
const LOOKUP_TABLE_META_SZ = 56;
const PUBKEY_SZ = 32;

export interface InnerIx {
  programIdIndex: number;
  accounts: Uint8Array;
  data: Uint8Array;
  stackHeight: number;
}

export interface ExecMeta {
  err: TxError | null;
  logs: string[];
  unitsConsumed: number;
  /** Per top-level instruction index (empty lists left out when encoding). */
  innerInstructions: InnerIx[][];
  returnData: { programId: Buffer; data: Buffer } | null;
  fee: number;
  computeUnitPrice: number;
  preBalances: number[];
  postBalances: number[];
  /** Token balances of the token accounts among the keys (only looked at when a token program is a key). */
  preTokenBalances: TokenBalance[];
  postTokenBalances: TokenBalance[];
  loaded: { writable: Buffer[]; readonly: Buffer[] };
}

export interface TokenBalance {
  accountIndex: number;
  mint: string;
  owner: string;
  programId: string;
  uiTokenAmount: ReturnType<typeof uiAmount>;
}

export interface SimResult extends ExecMeta {
  /** Post-execution state of every account the transaction loaded (address hex → account). */
  post: Map<string, Account>;
}

export interface ChainAccount {
  lamports: bigint;
  data: Uint8Array;
  owner: Uint8Array;
  executable: boolean;
  rentEpoch: bigint;
}

function num(v: bigint | null): number {
  return v === null ? 0 : Number(v);
}

const TOKEN_PROGRAMS = new Set([TOKEN_PROGRAM, TOKEN_2022_PROGRAM].map((k) => Buffer.from(bs58.decode(k)).toString('hex')));

/** Rent-exempt accounts carry rent_epoch u64::MAX on current clusters. */
const RENT_EXEMPT_EPOCH = 2n ** 64n - 1n;
/** agave's MAX_ENTRIES of the SlotHashes sysvar. */
const MAX_SLOT_HASHES = 512;

export class Bank {
  readonly svm: LiteSvm;
  private readonly slotHashes: SlotHashInput[] = [];

  constructor(slotsPerEpoch: number) {
    this.svm = new LiteSvm();
    this.svm.setBlockhashCheck(false);
    this.svm.setTransactionHistory(0n);
    this.svm.setEpochSchedule(new EpochSchedule(BigInt(slotsPerEpoch), BigInt(slotsPerEpoch), false, 0n, 0n));
  }

  setClock(slot: number, slotsPerEpoch: number, unixSeconds: number, epochStartSeconds: number): void {
    const epoch = BigInt(Math.floor(slot / slotsPerEpoch));
    this.svm.setClock(new Clock(BigInt(slot), BigInt(epochStartSeconds), epoch, epoch + 1n, BigInt(unixSeconds)));
  }

  fund(pubkey: Buffer, lamports: bigint): void {
    this.svm.setAccount(pubkey, new Account(lamports, new Uint8Array(0), new Uint8Array(32), false, RENT_EXEMPT_EPOCH));
  }

  /** The SlotHashes sysvar, newest first (address lookup tables check their recent slot against it). */
  pushSlotHash(slot: number, blockhash: string): void {
    this.slotHashes.unshift({ slot: BigInt(slot), hash: blockhash });
    if (this.slotHashes.length > MAX_SLOT_HASHES) this.slotHashes.pop();
    this.svm.setSlotHashes(this.slotHashes);
  }

  account(pubkey: Uint8Array): ChainAccount | null {
    const a = this.svm.getAccount(pubkey);
    if (a === null) return null;
    // A zero-lamport account does not exist for a real node.
    if (a.lamports() === 0n) return null;
    return { lamports: a.lamports(), data: a.data(), owner: a.owner(), executable: a.executable(), rentEpoch: a.rentEpoch() };
  }

  balance(pubkey: Uint8Array): bigint {
    return this.svm.getBalance(pubkey) ?? 0n;
  }

  programAccounts(program: Uint8Array): Array<{ pubkey: Buffer; account: ChainAccount }> {
    return this.svm.getProgramAccounts(program).map((x) => {
      const a = x.account();
      return { pubkey: Buffer.from(x.address), account: { lamports: a.lamports(), data: a.data(), owner: a.owner(), executable: a.executable(), rentEpoch: a.rentEpoch() } };
    });
  }

  rentExempt(len: number): number {
    return Number(this.svm.minimumBalanceForRentExemption(BigInt(len)));
  }

  /** Lookup-table addresses a v0 message loads, writable then readonly (unknown tables/indexes are skipped). */
  loadedAddresses(tx: TxFields): { writable: Buffer[]; readonly: Buffer[] } {
    const writable: Buffer[] = [];
    const readonly: Buffer[] = [];
    for (const l of tx.addressTableLookups) {
      const table = this.svm.getAccount(l.accountKey);
      if (table === null) continue;
      const data = Buffer.from(table.data());
      const at = (i: number): Buffer | null => {
        const off = LOOKUP_TABLE_META_SZ + i * PUBKEY_SZ;
        return off + PUBKEY_SZ <= data.length ? data.subarray(off, off + PUBKEY_SZ) : null;
      };
      for (const i of l.writableIndexes) { const k = at(i); if (k !== null) writable.push(k); }
      for (const i of l.readonlyIndexes) { const k = at(i); if (k !== null) readonly.push(k); }
    }
    return { writable, readonly };
  }

  private tokenBalances(keys: Buffer[], read: (k: Buffer) => Account | null): TokenBalance[] {
    const out: TokenBalance[] = [];
    keys.forEach((k, accountIndex) => {
      const a = read(k);
      if (a === null) return;
      const programId = bs58.encode(a.owner());
      if (!isTokenProgram(programId)) return;
      const t = readTokenAccount(a.data());
      if (t === null) return;
      const mint = this.svm.getAccount(Buffer.from(bs58.decode(t.mint)));
      const decimals = mint === null ? null : readMint(mint.data())?.decimals ?? null;
      if (decimals === null) return;
      out.push({ accountIndex, mint: t.mint, owner: t.owner, programId, uiTokenAmount: uiAmount(t.amount, decimals) });
    });
    return out;
  }

  /** `balances` false (a preflight): skip what only a recorded transaction or returned accounts need. */
  private run(raw: Uint8Array, tx: TxFields, simulate: boolean, balances = true): { r: TransactionMetadata | FailedTransactionMetadata | null; sim: SimResult } {
    const loaded = this.loadedAddresses(tx);
    const keys = [...tx.accountKeys, ...loaded.writable, ...loaded.readonly];
    const preBalances = balances ? keys.map((k) => num(this.svm.getBalance(k))) : [];
    const tokens = balances && keys.some((k) => TOKEN_PROGRAMS.has(k.toString('hex')));
    const preTokenBalances = tokens ? this.tokenBalances(keys, (k) => this.svm.getAccount(k)) : [];
    let out: TransactionMetadata | FailedTransactionMetadata;
    const post = new Map<string, Account>();
    if (simulate) {
      const s = tx.versioned === true ? this.svm.simulateVersionedTransaction(raw) : this.svm.simulateLegacyTransaction(raw);
      if (s instanceof FailedTransactionMetadata) out = s;
      else {
        if (balances) for (const a of s.postAccounts()) post.set(Buffer.from(a.address).toString('hex'), a.account());
        out = s.meta();
      }
    } else {
      out = tx.versioned === true ? this.svm.sendVersionedTransaction(raw) : this.svm.sendLegacyTransaction(raw);
    }
    const meta: TransactionMetadata = out instanceof FailedTransactionMetadata ? out.meta() : out;
    let err = out instanceof FailedTransactionMetadata ? txError(out) : null;
    let postBalances: number[];
    if (!balances) postBalances = [];
    else if (simulate) postBalances = keys.map((k, i) => { const a = post.get(k.toString('hex')); return a === undefined ? preBalances[i]! : Number(a.lamports()); });
    else postBalances = keys.map((k) => num(this.svm.getBalance(k)));
    const postTokenBalances = !tokens ? [] : this.tokenBalances(keys, (k) => (simulate ? post.get(k.toString('hex')) ?? this.svm.getAccount(k) : this.svm.getAccount(k)));
    const fees = feeOf(tx);
    let fee = fees.fee;
    if (err !== null && !simulate) {
      // A failed transaction lands when it was charged, and then pays exactly what left the payer (its other
      // effects are rolled back); otherwise it changed nothing and a leader would have dropped it.
      const charged = preBalances[0]! - postBalances[0]!;
      err = { ...err, lands: charged > 0 };
      fee = charged;
    }
    const rd = meta.returnData();
    const rdData = Buffer.from(rd.data());
    const sim: SimResult = {
      err,
      logs: meta.logs(),
      unitsConsumed: Number(meta.computeUnitsConsumed()),
      innerInstructions: meta.innerInstructions().map((list: InnerInstruction[]) => list.map((ii) => {
        const c = ii.instruction();
        return { programIdIndex: c.programIdIndex(), accounts: c.accounts(), data: c.data(), stackHeight: ii.stackHeight() };
      })),
      returnData: rdData.length > 0 ? { programId: Buffer.from(rd.programId()), data: rdData } : null,
      fee,
      computeUnitPrice: fees.computeUnitPrice,
      preBalances,
      postBalances,
      preTokenBalances,
      postTokenBalances,
      loaded,
      post,
    };
    return { r: out, sim };
  }

  /** Executes and commits (litesvm commits the fee of a failed transaction that lands). */
  execute(raw: Uint8Array, tx: TxFields): ExecMeta {
    return this.run(raw, tx, false).sim;
  }

  /** `accounts` false: the result has no post-state (no post map, no balances), as a preflight needs. */
  simulate(raw: Uint8Array, tx: TxFields, sigVerify: boolean, accounts = true): SimResult {
    const before = this.svm.getSigverify();
    this.svm.setSigverify(sigVerify);
    try {
      return this.run(raw, tx, true, accounts).sim;
    } finally {
      this.svm.setSigverify(before);
    }
  }
}

import crypto from 'node:crypto';

// Proof of History as a validator records it (agave's Poh and Entry::new):
//   - the state is a sha256 chain: hash ← sha256(hash);
//   - a tick entry with num_hashes = n: n−1 plain hashes, then one more; its hash is the result;
//   - a transaction entry: num_hashes−1 plain hashes, then hash ← sha256(hash ‖ mixin) where mixin is the
//     Merkle root of all signatures of the entry's transactions (hash_transactions, below);
//   - each tick closes hashesPerTick hashes counted since the previous tick (records included).
// The slot's blockhash is its last tick's hash; the next slot continues the chain.

export interface PohEntry {
  numHashes: bigint;
  hash: Buffer;
  /** Raw transactions (empty for a tick). */
  txs: Buffer[];
}

const LEAF_PREFIX = Buffer.from([0]);
const NODE_PREFIX = Buffer.from([1]);

function sha256(...parts: Buffer[]): Buffer {
  const h = crypto.createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest();
}

/** solana-merkle-tree root over the signatures (an odd node is paired with itself); zero hash when empty. */
export function hashSignatures(signatures: Buffer[]): Buffer {
  if (signatures.length === 0) return Buffer.alloc(32);
  let level = signatures.map((s) => sha256(LEAF_PREFIX, s));
  while (level.length > 1) {
    const next: Buffer[] = [];
    for (let i = 0; i < level.length; i += 2) next.push(sha256(NODE_PREFIX, level[i]!, level[i + 1] ?? level[i]!));
    level = next;
  }
  return level[0]!;
}

export class Poh {
  private hash: Buffer;
  private sinceTick = 0;
  ticks = 0;

  constructor(
    start: Buffer,
    private readonly hashesPerTick: number,
  ) {
    this.hash = Buffer.from(start);
  }

  current(): Buffer {
    return this.hash;
  }

  private spin(n: number): void {
    for (let i = 0; i < n; i++) this.hash = sha256(this.hash);
  }

  /** One entry for transactions; `signatures` are every signature of `txs`, in order. */
  record(txs: Buffer[], signatures: Buffer[]): PohEntry {
    this.hash = sha256(this.hash, hashSignatures(signatures));
    this.sinceTick++;
    return { numHashes: 1n, hash: this.hash, txs };
  }

  /**
   * Alpenglow's low-power PoH (Agave blockstore_processor.rs verify_ticks, should_have_alpenglow_ticks: "each block
   * only has 1 tick at the very end" and every entry has num_hashes 1): the block's one tick, a single hash.
   */
  finalTick(): PohEntry {
    this.spin(1);
    this.sinceTick = 0;
    this.ticks++;
    return { numHashes: 1n, hash: this.hash, txs: [] };
  }

  /** Back to `start` (a bank replayed from its parent again: the UpdateParent's new bank starts at the parent's last hash). */
  reset(start: Buffer): void {
    this.hash = Buffer.from(start);
    this.sinceTick = 0;
  }

  tick(): PohEntry {
    const n = Math.max(1, this.hashesPerTick - this.sinceTick);
    this.spin(n);
    this.sinceTick = 0;
    this.ticks++;
    return { numHashes: BigInt(n), hash: this.hash, txs: [] };
  }
}

/** Checks an entry list against its start hash (tests and tools): the validator's verify. */
export function verifyEntries(start: Buffer, entries: Array<{ numHashes: bigint; hash: Buffer; signatures: Buffer[] }>): boolean {
  let h: Buffer = Buffer.from(start);
  for (const e of entries) {
    const n = Number(e.numHashes);
    if (e.signatures.length === 0) {
      for (let i = 0; i < n; i++) h = sha256(h);
    } else {
      for (let i = 0; i < n - 1; i++) h = sha256(h);
      h = sha256(h, hashSignatures(e.signatures));
    }
    if (!h.equals(e.hash)) return false;
  }
  return true;
}

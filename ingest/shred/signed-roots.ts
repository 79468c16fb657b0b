// SignedRoots: what the resolver remembers about Merkle roots and leader signatures, so that a root is
// verified at most once, a forgery repeated costs hashes and no verify, and a set already handed on is
// never handed on again, not even after a window reset.
//
// A Merkle shred's leader signature signs its set's 32-byte root. Three bounded tables (oldest dropped first):
//   proven    — signature bytes → the root they verified over. A shred carrying those bytes and folding to
//               that root needs no verify; folding to ANY other root it is a forgery, also without a verify:
//               an ed25519 signature verifies one message (two would take a SHA-512 collision), and a
//               valid signature's bytes are public the moment its first shred is on the wire — the cheapest
//               forgery there is (a real shred with its slot or payload rewritten) reuses them.
//   failed    — (signature, root) pairs that did not verify: a duplicate flood of a forgery costs one verify.
//   completed — roots of sets that completed (either mode). A set with such a root is not opened again:
//               after an eviction or a re-anchor (window reset), copies of an old block are not reassembled
//               and published twice. The cap is the retention horizon: default 65,536 sets, the completed-set
//               cap of the resolver, ~ a window of 512 busy slots.
// Keys are latin1 strings of the bytes (V8 one-byte strings: 64 or 96 bytes of key, no Buffer object kept).

import { OldestFirstMap, OldestFirstSet } from '../../infra/base/oldest-first';
import { SIGNATURE_SZ } from './layout';

export type SignedLookup = 'proven' | 'forged' | 'failed' | 'unknown';

export class SignedRoots {
  // Oldest first in O(1) (infra/base/oldest-first.ts): a plain Map's first key walks every entry deleted before
  // it, ~25–30 µs an eviction at 65,536 — once per set, at the cap, for proven and completed alike.
  private readonly proven = new OldestFirstMap<string, string>();
  private readonly failedPairs = new OldestFirstSet<string>();
  private readonly completed = new OldestFirstSet<string>();

  constructor(
    private readonly maxProven = 65_536,
    private readonly maxFailed = 16_384,
    private readonly maxCompleted = 65_536,
  ) {}

  /** The signature bytes of a packet as a key. */
  static sigKey(packet: Buffer): string {
    return packet.toString('latin1', 0, SIGNATURE_SZ);
  }

  static rootKey(root: Buffer): string {
    return root.toString('latin1');
  }

  lookup(sigKey: string, rootKey: string): SignedLookup {
    const r = this.proven.get(sigKey);
    if (r !== undefined) return r === rootKey ? 'proven' : 'forged';
    return this.failedPairs.has(sigKey + rootKey) ? 'failed' : 'unknown';
  }

  addProven(sigKey: string, rootKey: string): void {
    this.proven.set(sigKey, rootKey);
    if (this.proven.size > this.maxProven) this.proven.deleteOldest();
  }

  addFailed(sigKey: string, rootKey: string): void {
    this.failedPairs.add(sigKey + rootKey);
    if (this.failedPairs.size > this.maxFailed) this.failedPairs.deleteOldest();
  }

  isCompleted(rootKey: string): boolean {
    return this.completed.has(rootKey);
  }

  addCompleted(rootKey: string): void {
    this.completed.add(rootKey);
    if (this.completed.size > this.maxCompleted) this.completed.deleteOldest();
  }

  sizes(): { proven: number; failed: number; completed: number } {
    return { proven: this.proven.size, failed: this.failedPairs.size, completed: this.completed.size };
  }
}

import { InstructionCursor } from '../../proto/tx-message-reader';
import { ALT_PROGRAM_ID, decodeAltInstruction } from '../../proto/lookup-table/program';
import type { TableCache } from './table-cache';
import { equal32 } from '../filter/key32';
import { tableId } from './table-resolver';

// Feeds the table cache from the stream: every instruction of a transaction that calls the lookup-table program
// (create, extend, freeze, deactivate, close) is applied to the cache's pending view, in stream order, at the
// transaction's slot. Transactions that do not name the program among their static keys cost one search of the
// key block (the program id cannot come from a table: program ids must be static keys).

const KEY = 32;

export class StreamObserver {
  private readonly ix = new InstructionCursor();

  constructor(private readonly cache: TableCache) {}

  observe(accountKeys: Buffer, message: Buffer, slot: bigint): void {
    const program = programIndex(accountKeys);
    if (program < 0) return;
    const c = this.ix.reset(message);
    while (c.next()) {
      if (c.programIdIndex !== program || c.accountsLen < 1) continue;
      const ix = decodeAltInstruction(c.b.subarray(c.dataOff, c.dataOff + c.dataLen));
      if (ix === null) continue;
      const tableAt = c.b[c.accountsOff]! * KEY;
      // The table account named through another table: not followed (no known program does this).
      if (tableAt + KEY > accountKeys.length) continue;
      let authority: Buffer | null = null;
      if (ix.kind === 'create' && c.accountsLen >= 2) {
        const a = c.b[c.accountsOff + 1]! * KEY;
        if (a + KEY <= accountKeys.length) authority = accountKeys.subarray(a, a + KEY);
      }
      this.cache.applyInstruction(tableId(accountKeys, tableAt), accountKeys.subarray(tableAt, tableAt + KEY), ix, slot, authority);
    }
  }
}

const ALT_HEAD = ALT_PROGRAM_ID.readUInt32LE(0);

/** Index of the lookup-table program among the static keys, or -1 (a first-word check per key, then all 32
 *  bytes: cheaper than a native search call for the ~10 keys of a transaction). */
function programIndex(keys: Buffer): number {
  for (let o = 0; o + KEY <= keys.length; o += KEY) {
    if ((keys[o]! | (keys[o + 1]! << 8) | (keys[o + 2]! << 16) | (keys[o + 3]! << 24)) >>> 0 !== ALT_HEAD) continue;
    if (equal32(keys, o, ALT_PROGRAM_ID, 0)) return o / KEY;
  }
  return -1;
}

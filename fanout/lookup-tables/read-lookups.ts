import { LookupCursor } from '../../proto/tx-message-reader';
import type { TableLookup } from '../filter/loaded-addresses';

/** A transaction's lookups as the resolver takes them (views into `message`), or null when they do not parse. */
export function readLookups(message: Buffer, cursor = new LookupCursor()): TableLookup[] | null {
  const out: TableLookup[] = [];
  const c = cursor.reset(message);
  while (c.next()) {
    out.push({
      table: message.subarray(c.tableOff, c.tableOff + 32),
      writableIndexes: message.subarray(c.writableOff, c.writableOff + c.writableLen),
      readonlyIndexes: message.subarray(c.readonlyOff, c.readonlyOff + c.readonlyLen),
    });
  }
  return c.bad ? null : out;
}

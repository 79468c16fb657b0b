import { decodeLookupsHeader } from '../../bus/topics/stream-transactions-lookups';
import type { TxRecord } from '../../bus/topics/stream-transactions';
import { LookupCursor } from '../../proto/tx-message-reader';
import type { TableLookup } from '../filter/loaded-addresses';

/** The lookups of a record, where it has them: out of its lookups header (views into the header), or — a record
 *  produced before ingest set the header — out of the message bytes. The resolver takes them. */
export function recordLookups(r: Pick<TxRecord, 'message' | 'lookups'>): TableLookup[] | null {
  return r.lookups !== null ? decodeLookupsHeader(r.lookups) : readLookups(r.message);
}

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

import type { TxnCursor } from './cursor';
import { checkIndexes, readMessageBody, type MessageBody } from './message';

// Legacy message: no version byte (its first byte, num_required_signatures, has the high bit clear), no
// address-table lookups. The body is message.ts.

export function readLegacyMessage(c: TxnCursor, signatureCount: number): MessageBody | null {
  const body = readMessageBody(c, signatureCount);
  if (body === null || !checkIndexes(c, body, [])) return null;
  return body;
}

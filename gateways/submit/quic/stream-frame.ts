// The stream framing of compat.md: a bidirectional stream carries 0x01, the serialized transaction, FIN;
// the answer is exactly [0x01, status]. Pure.

export const STREAM_VERSION = 0x01;

/** The transaction inside a bidirectional stream's bytes, or null when the framing is wrong (empty, or not 0x01). */
export function streamTransaction(stream: Buffer): Buffer | null {
  if (stream.length < 2 || stream[0] !== STREAM_VERSION) return null;
  return stream.subarray(1);
}

// Kafka's default partitioner for keyed records: toPositive(murmur2(key)) % partitions. The Java client and
// kafkajs's DefaultPartitioner compute exactly this, so the embedded bus puts a key on the same partition
// Kafka would. Vectors (from Kafka's UtilsTest) are checked in test/bus/embedded.test.ts.

const SEED = 0x9747b28c;
const M = 0x5bd1e995;
const R = 24;

/** Java's signed 32-bit murmur2 of the key bytes. Math.imul keeps the 32-bit wrap-around of Java ints. */
export function murmur2(data: Uint8Array): number {
  const length = data.length;
  let h = SEED ^ length;
  const length4 = length >>> 2;
  for (let i = 0; i < length4; i++) {
    const i4 = i * 4;
    let k = data[i4]! | (data[i4 + 1]! << 8) | (data[i4 + 2]! << 16) | (data[i4 + 3]! << 24);
    k = Math.imul(k, M);
    k ^= k >>> R;
    k = Math.imul(k, M);
    h = Math.imul(h, M) ^ k;
  }
  // The 1–3 trailing bytes (Java's switch falls through; noFallthroughCasesInSwitch wants it spelled out).
  const tail = length & ~3;
  const rest = length & 3;
  if (rest > 0) {
    if (rest === 3) h ^= data[tail + 2]! << 16;
    if (rest >= 2) h ^= data[tail + 1]! << 8;
    h ^= data[tail]!;
    h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
}

/** The partition Kafka's default partitioner picks for a non-null key. */
export function partitionForKey(key: Uint8Array, partitions: number): number {
  return (murmur2(key) & 0x7fffffff) % partitions;
}

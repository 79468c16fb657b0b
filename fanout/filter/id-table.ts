// Open-addressing tables of ids, shared by the filter index (key ids) and dedupe (ring positions): a table slot
// holds id + 1 (0 = empty), probing is linear, and each id's hash lives in a side array. Deletion shifts later
// members of the probe run back into the hole when their home allows it, so there are no tombstones and probes
// stay short however many ids come and go.

/** Removes `id` (which must be in `t`) from a table of size 2^k. */
export function removeId(t: Int32Array, hashes: Int32Array, id: number): void {
  const mask = t.length - 1;
  let i = hashes[id]! & mask;
  while (t[i] !== id + 1) i = (i + 1) & mask;
  for (let j = (i + 1) & mask; ; j = (j + 1) & mask) {
    const v = t[j]!;
    if (v === 0) break;
    const home = hashes[v - 1]! & mask;
    const between = i <= j ? i < home && home <= j : i < home || home <= j;
    if (between) continue;
    t[i] = v;
    i = j;
  }
  t[i] = 0;
}

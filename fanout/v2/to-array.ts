/** Offsets per partition as the bus gives them (partition → offset text) as an array indexed by partition. */
export function toArray(m: Map<number, string>): number[] {
  const out: number[] = [];
  for (const [p, o] of m) out[p] = Number(o);
  for (let i = 0; i < out.length; i++) out[i] ??= 0;
  return out;
}

// A list of filter keys left where they arrived: the request buffer plus the offsets of each key's base58 text
// (request-wire.ts makes them; filter.ts decodes keys straight from the bytes).

/** The keys of one list: base58 text at bytes[offs[2i] .. offs[2i+1]). */
export class WireKeys {
  constructor(
    readonly bytes: Buffer,
    readonly offs: Int32Array,
  ) {}
  get length(): number {
    return this.offs.length >>> 1;
  }
  /** Key i as text (for error messages). */
  text(i: number): string {
    return this.bytes.toString('utf8', this.offs[2 * i], this.offs[2 * i + 1]);
  }
}

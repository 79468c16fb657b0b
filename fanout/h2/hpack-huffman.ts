// The HPACK static Huffman code (RFC 7541 section 5.2 and Appendix B).
//
// The code is canonical: within one length, codes rise with the symbol, and a longer code is the next shorter
// one shifted left. So the 257 lengths below are the whole table; the codes are derived at module load.
// Decoding walks a 4-bit state table built once from those codes: one state per internal node of the code
// tree, and since the shortest code is 5 bits a nibble completes at most one symbol.

/** Code length in bits of each symbol 0..255 and of EOS (256), transcribed from RFC 7541 Appendix B. */
// prettier-ignore
export const HUFFMAN_LENGTHS: Readonly<Uint8Array> = Uint8Array.of(
  13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28,
  6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10,
  13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6,
  15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28,
  20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24,
  22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23,
  26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27,
  20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26,
  30,
);

const EOS = 256;
const SYMBOLS = 257;
const NIBBLE_BITS = 4;
const NIBBLES = 1 << NIBBLE_BITS;
/** Padding is a prefix of EOS (all ones) strictly shorter than a byte (RFC 7541 section 5.2). */
const MAX_PADDING_BITS = 7;

function canonicalCodes(lengths: Readonly<Uint8Array>): Uint32Array {
  const order = Array.from({ length: SYMBOLS }, (_, s) => s).sort((a, b) => lengths[a] - lengths[b] || a - b);
  const codes = new Uint32Array(SYMBOLS);
  let code = 0;
  let len = lengths[order[0]];
  for (const sym of order) {
    code *= 2 ** (lengths[sym] - len);
    len = lengths[sym];
    codes[sym] = code++;
  }
  return codes;
}

/** The code of each symbol 0..256, right-aligned in HUFFMAN_LENGTHS[sym] bits. */
export const HUFFMAN_CODES: Readonly<Uint32Array> = canonicalCodes(HUFFMAN_LENGTHS);

// Code tree: internal node i has children child[2i] (bit 0) and child[2i+1] (bit 1); a child > 0 is an
// internal node, a child < 0 is the leaf -(sym+1). The root is node 0, which is never a child, so 0 = unset.
const INTERNAL_NODES = SYMBOLS - 1; // a full binary tree with 257 leaves
function buildTree(): Int16Array {
  const child = new Int16Array(INTERNAL_NODES * 2);
  let nodes = 1;
  for (let sym = 0; sym < SYMBOLS; sym++) {
    const len = HUFFMAN_LENGTHS[sym];
    let node = 0;
    for (let bit = len - 1; bit >= 0; bit--) {
      const slot = node * 2 + (Math.floor(HUFFMAN_CODES[sym] / 2 ** bit) & 1);
      if (bit === 0) {
        if (child[slot] !== 0) throw new Error(`hpack huffman: code of symbol ${sym} collides`);
        child[slot] = -(sym + 1);
      } else {
        if (child[slot] < 0) throw new Error(`hpack huffman: code of symbol ${sym} has a prefix code`);
        if (child[slot] === 0) child[slot] = nodes++;
        node = child[slot];
      }
    }
  }
  if (nodes !== INTERNAL_NODES || child.includes(0)) throw new Error('hpack huffman: code tree is not full');
  return child;
}

/** Per (state, nibble): the state after the nibble, and the symbol completed on the way (NONE or FAIL = EOS). */
const NONE = -1;
const FAIL = -2;
const NEXT = new Uint8Array(INTERNAL_NODES * NIBBLES);
const EMIT = new Int16Array(INTERNAL_NODES * NIBBLES);
/** States in which the input may end: reached from the root by at most 7 one-bits. */
const ACCEPT = new Uint8Array(INTERNAL_NODES);

(function buildNibbleTable(): void {
  const child = buildTree();
  for (let state = 0; state < INTERNAL_NODES; state++) {
    for (let nib = 0; nib < NIBBLES; nib++) {
      let node = state;
      let emit = NONE;
      for (let bit = NIBBLE_BITS - 1; bit >= 0; bit--) {
        const next = child[node * 2 + ((nib >> bit) & 1)];
        if (next > 0) {
          node = next;
        } else {
          emit = -next - 1 === EOS ? FAIL : -next - 1;
          node = 0;
        }
        if (emit === FAIL) break;
      }
      NEXT[state * NIBBLES + nib] = node;
      EMIT[state * NIBBLES + nib] = emit;
    }
  }
  let node = 0;
  for (let ones = 0; ones <= MAX_PADDING_BITS; ones++) {
    ACCEPT[node] = 1;
    node = child[node * 2 + 1];
  }
})();

/** Decode output, reused: the result leaves as a string, so nothing keeps a view of it. */
let scratch = Buffer.allocUnsafe(256);

/**
 * Decodes src[start, end) as one Huffman-coded string literal; the result has one char per octet (latin1).
 * null means a COMPRESSION_ERROR: EOS inside the string, padding of 8 bits or more, or padding not all ones.
 */
export function huffmanDecode(src: Buffer, start: number, end: number): string | null {
  const most = Math.ceil(((end - start) * 8) / 5); // every symbol takes at least 5 bits
  if (scratch.length < most) scratch = Buffer.allocUnsafe(Math.max(most, scratch.length * 2));
  const out = scratch;
  let n = 0;
  let state = 0;
  for (let i = start; i < end; i++) {
    const b = src[i];
    let idx = state * NIBBLES + (b >> NIBBLE_BITS);
    let emit = EMIT[idx];
    if (emit >= 0) out[n++] = emit;
    else if (emit === FAIL) return null;
    state = NEXT[idx];
    idx = state * NIBBLES + (b & (NIBBLES - 1));
    emit = EMIT[idx];
    if (emit >= 0) out[n++] = emit;
    else if (emit === FAIL) return null;
    state = NEXT[idx];
  }
  if (ACCEPT[state] === 0) return null;
  return out.toString('latin1', 0, n);
}

/** Huffman-codes a latin1 string (chars above 0xff are a bug), padding the last octet with ones. */
export function huffmanEncode(s: string): Buffer {
  let bits = 0;
  for (let i = 0; i < s.length; i++) bits += HUFFMAN_LENGTHS[s.charCodeAt(i)];
  const out = Buffer.alloc(Math.ceil(bits / 8));
  // acc holds fewer than 8 pending bits plus one code (at most 30), so it stays an exact integer below 2^37.
  let acc = 0;
  let pending = 0;
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const sym = s.charCodeAt(i);
    if (sym > 0xff) throw new Error(`huffmanEncode: char ${sym} at ${i} is not latin1`);
    acc = acc * 2 ** HUFFMAN_LENGTHS[sym] + HUFFMAN_CODES[sym];
    pending += HUFFMAN_LENGTHS[sym];
    while (pending >= 8) {
      pending -= 8;
      out[n++] = Math.floor(acc / 2 ** pending) & 0xff;
      acc %= 2 ** pending;
    }
  }
  if (pending > 0) out[n] = ((acc << (8 - pending)) | (0xff >> pending)) & 0xff;
  return out;
}

import { createHash } from 'node:crypto';
import { isAscii, isUtf8 } from 'node:buffer';
import { WireError } from '../../proto/wire';
import type { FilterSpec } from '../filter/compile';
import type { SubscribeUpdate } from './request';
import { WireKeys } from '../filter/wire-keys';

// SubscribeRequest bytes → SubscribeUpdate, for the server, without google-protobuf: a full-size filter map
// (48,000 keys, 2.2 MB) would otherwise become 48,000 JS strings and a tree of generated objects per update,
// most of it garbage at once. Here a key stays where it is: a list is the request buffer plus the offsets of
// each key's base58 text, and the compiler decodes keys straight from those bytes. Each filter also carries a
// digest of its bytes, so an unchanged filter in the next update is recognised without looking at its keys.
//
// It accepts and rejects exactly what proto/wire.ts checkSubscribeRequest + the generated decoder do:
//   SubscribeRequest  1 transactions (map entry, repeated)  2 ping_id int32  3 new_seen_slots bool
//   map entry         1 key string (absent: "")  2 value SubscribeRequestFilterTransactions (absent: empty)
//   filter            2 account_include  3 account_exclude  4 account_required  (repeated string)
// Unknown fields are skipped by wire type; a known field with the wrong wire type, a bad varint, a length past
// the end, a group or invalid UTF-8 throws WireError (grpc-js then ends the call with INTERNAL). A repeated
// map key keeps the last value; entries are listed by name in code-unit order, as the generated map iterates.

const WT_VARINT = 0;
const WT_I64 = 1;
const WT_LEN = 2;
const WT_I32 = 5;

// Offsets are gathered in scratch arrays (one per list, reused: a filter is read start to end before the next)
// and copied out at their exact size: growing a JS array by push made ~5 MB of garbage per full-size map.
const scratch = [new Int32Array(2048), new Int32Array(2048), new Int32Array(2048)];
const counts = [0, 0, 0];

function pushKey(list: number, s: number, e: number): void {
  let a = scratch[list]!;
  const n = counts[list]!;
  if (n + 2 > a.length) {
    const b = new Int32Array(a.length * 2);
    b.set(a);
    scratch[list] = a = b;
  }
  a[n] = s;
  a[n + 1] = e;
  counts[list] = n + 2;
}

// The walk keeps its cursor in module state (one request at a time; nothing here is re-entrant): a tuple per
// field would be 100,000+ short-lived arrays for a full-size map.
/** Offset after the last varint read; its value (exact up to 2^53) and its low 32 bits. */
let pos = 0;
let value = 0;
let low32 = 0;
/** Payload bounds of the last field skipped. */
let pStart = 0;
let pEnd = 0;
/** The last tag read. */
let tField = 0;
let tWire = 0;

function varint(b: Buffer, o: number, end: number, what: string): void {
  let v = 0;
  let lo = 0;
  for (let i = 0; i < 10; i++) {
    if (o >= end) throw new WireError(`${what}: truncated varint`);
    const byte = b[o++]!;
    v += (byte & 0x7f) * 2 ** (7 * i);
    if (i < 5) lo |= (byte & 0x7f) << (7 * i);
    if (byte < 0x80) {
      pos = o;
      value = v;
      low32 = lo;
      return;
    }
  }
  throw new WireError(`${what}: varint longer than 10 bytes`);
}

/** Skips a field's payload of wire type wt at o: sets pStart/pEnd. */
function payload(b: Buffer, o: number, end: number, wt: number, at: string): void {
  switch (wt) {
    case WT_VARINT:
      varint(b, o, end, at);
      pStart = o;
      pEnd = pos;
      return;
    case WT_I64:
    case WT_I32: {
      const n = wt === WT_I64 ? 8 : 4;
      if (end - o < n) throw new WireError(`${at}: truncated`);
      pStart = o;
      pEnd = o + n;
      return;
    }
    case WT_LEN: {
      varint(b, o, end, at);
      const n = value;
      if (n > end - pos) throw new WireError(`${at}: length ${n} exceeds the ${end - pos} bytes left`);
      pStart = pos;
      pEnd = pos + n;
      return;
    }
    default:
      throw new WireError(`${at}: unsupported wire type ${wt}`);
  }
}

/** Reads a tag at o: sets tField, tWire and pos. */
function tag(b: Buffer, o: number, end: number, what: string): void {
  // One-byte tags (every field here) skip the general varint.
  const t0 = b[o]!;
  if (o < end && t0 < 0x80) {
    pos = o + 1;
    tField = t0 >>> 3;
    tWire = t0 & 7;
  } else {
    varint(b, o, end, what);
    if (value > 0xffffffff) throw new WireError(`${what}: tag out of range`);
    tField = Math.floor(value / 8);
    tWire = value & 7;
  }
  if (tField === 0) throw new WireError(`${what}: field number 0`);
}

function utf8(b: Buffer, s: number, e: number, what: string): void {
  // Keys are ASCII: a byte loop settles them without a view object; anything else goes to isUtf8.
  for (let i = s; i < e; i++) {
    if (b[i]! >= 0x80) {
      if (!isUtf8(b.subarray(s, e))) throw new WireError(`${what}: invalid UTF-8`);
      return;
    }
  }
}

function filter(b: Buffer, o: number, end: number, what: string): FilterSpec & { digest: string } {
  counts[0] = counts[1] = counts[2] = 0;
  const start = o;
  // One native scan of the whole filter (the usual case: every byte ASCII) spares a byte loop per key.
  const allAscii = isAscii(b.subarray(o, end));
  while (o < end) {
    // The common field, a key: a one-byte tag of a list field and a one-byte length. The bytes are checked as
    // the general path would (ASCII is valid UTF-8; anything else goes to it).
    const t0 = b[o]!;
    if ((t0 === 0x12 || t0 === 0x1a || t0 === 0x22) && o + 1 < end) {
      const s = o + 2;
      const e = s + b[o + 1]!;
      if (b[o + 1]! < 0x80 && e <= end) {
        let ascii = true;
        if (!allAscii) {
          for (let i = s; i < e; i++) {
            if (b[i]! >= 0x80) {
              ascii = false;
              break;
            }
          }
        }
        if (ascii) {
          pushKey((t0 >>> 3) - 2, s, e);
          o = e;
          continue;
        }
      }
    }
    tag(b, o, end, what);
    const field = tField;
    const wt = tWire;
    if (field >= 2 && field <= 4) {
      if (wt !== WT_LEN) throw new WireError(`${what} field ${field}: wire type ${wt}, want ${WT_LEN}`);
      payload(b, pos, end, wt, what);
      utf8(b, pStart, pEnd, what);
      pushKey(field - 2, pStart, pEnd);
    } else {
      payload(b, pos, end, wt, `${what} field ${field}`);
    }
    o = pEnd;
  }
  const digest = createHash('sha256').update(b.subarray(start, end)).digest('base64');
  const include = new WireKeys(b, scratch[0]!.slice(0, counts[0]));
  const exclude = new WireKeys(b, scratch[1]!.slice(0, counts[1]));
  const required = new WireKeys(b, scratch[2]!.slice(0, counts[2]));
  return { include, exclude, required, digest };
}

export function decodeSubscribeUpdate(b: Buffer): SubscribeUpdate {
  const what = 'SubscribeRequest';
  const byName = new Map<string, FilterSpec>();
  let pingId: number | undefined;
  let newSeenSlots: boolean | undefined;
  let o = 0;
  const end = b.length;
  while (o < end) {
    tag(b, o, end, what);
    const field = tField;
    const wt = tWire;
    const at = `${what} field ${field}`;
    const want = field === 1 ? WT_LEN : field === 2 || field === 3 ? WT_VARINT : -1;
    if (want >= 0 && wt !== want) throw new WireError(`${at}: wire type ${wt}, want ${want}`);
    payload(b, pos, end, wt, at);
    const s = pStart;
    const e = pEnd;
    if (field === 1) {
      let name: string | undefined;
      let spec: FilterSpec | undefined;
      for (let p = s; p < e; ) {
        tag(b, p, e, at);
        const f = tField;
        const w = tWire;
        const fat = `${at} field ${f}`;
        if ((f === 1 || f === 2) && w !== WT_LEN) throw new WireError(`${fat}: wire type ${w}, want ${WT_LEN}`);
        payload(b, pos, e, w, fat);
        const ps = pStart;
        const pe = pEnd;
        if (f === 1) {
          if (!isUtf8(b.subarray(ps, pe))) throw new WireError(`${fat}: invalid UTF-8`);
          name = b.toString('utf8', ps, pe);
        } else if (f === 2) {
          spec = filter(b, ps, pe, fat);
        }
        p = pe;
      }
      // Like the generated decoder: an absent key is "", an absent value an empty filter.
      byName.set(name ?? '', spec ?? filter(b, e, e, at));
    } else if (field === 2) {
      varint(b, s, e, at);
      pingId = low32 | 0;
    } else if (field === 3) {
      varint(b, s, e, at);
      newSeenSlots = low32 !== 0; // the generated decoder reads a bool from the low 32 bits
    }
    o = e;
  }
  const names = [...byName.keys()].sort();
  return { filters: names.map((n) => [n, byName.get(n)!] as const), pingId, newSeenSlots };
}

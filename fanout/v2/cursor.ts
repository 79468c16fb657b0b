// A v2 stream position: for each stream topic, the next bus offset of every partition. Everything before those
// offsets has been delivered to the stream or filtered out; nothing at or after them has. Offsets are the bus's,
// so every fanout instance reading the same topics reads a cursor the same way (resume anywhere).
//
// Bytes (proto/stream_v2.proto, "Cursor encoding"):
//   +0  u8      CURSOR_VERSION (1)
//   per topic, in tag order:
//       u8      topic tag (TopicTag)
//       varint  partition count P (1..MAX_PARTITIONS)
//       P × varint  next offset of partitions 0..P-1 (< 2^53)
// A topic the stream does not read is left out; a cursor without the transactions topic is refused. Tag 3
// (stream.slot-status) came later: a cursor without it is still valid, and the hub places the status topic from
// the cursor's slots position (hub.ts, resolveStart). Tag 4 (stream.entries) came later too: cursors made before
// it have no entries tag and are still valid (the hub decides what a missing topic means).

export const CURSOR_VERSION = 1;
/** Tags of the stream topics; the order they appear in a cursor. */
export const TopicTag = { transactions: 1, slots: 2, slotStatus: 3, entries: 4 } as const;
export type TopicTag = (typeof TopicTag)[keyof typeof TopicTag];
const KNOWN_TAGS: ReadonlySet<number> = new Set(Object.values(TopicTag));
const isTopicTag = (t: number): t is TopicTag => KNOWN_TAGS.has(t);
/** bus/config.ts allows up to 1024 stream partitions. */
const MAX_PARTITIONS = 1024;

/** Next offset per partition, per topic tag. Arrays are owned by whoever built the position. */
export type Position = Map<TopicTag, number[]>;

function varintSize(v: number): number {
  let n = 1;
  while (v >= 0x80) {
    v = Math.floor(v / 0x80);
    n++;
  }
  return n;
}

function writeVarint(buf: Buffer, o: number, v: number): number {
  while (v >= 0x80) {
    buf[o++] = (v & 0x7f) | 0x80;
    v = Math.floor(v / 0x80);
  }
  buf[o++] = v;
  return o;
}

export function encodeCursor(pos: Position): Buffer {
  const tags = [...pos.keys()].sort((a, b) => a - b);
  let size = 1;
  for (const t of tags) {
    const offs = pos.get(t)!;
    size += 1 + varintSize(offs.length);
    for (const o of offs) size += varintSize(o);
  }
  const buf = Buffer.allocUnsafe(size);
  buf[0] = CURSOR_VERSION;
  let o = 1;
  for (const t of tags) {
    const offs = pos.get(t)!;
    buf[o++] = t;
    o = writeVarint(buf, o, offs.length);
    for (const x of offs) o = writeVarint(buf, o, x);
  }
  return buf;
}

export type CursorDecode = { ok: true; position: Position } | { ok: false; reason: string };

function readVarint(b: Uint8Array, o: number): [number, number] | null {
  let v = 0;
  for (let i = 0; i < 8; i++) {
    if (o >= b.length) return null;
    const byte = b[o++]!;
    v += (byte & 0x7f) * 2 ** (7 * i);
    if (byte < 0x80) return v > Number.MAX_SAFE_INTEGER ? null : [v, o];
  }
  return null;
}

export function decodeCursor(b: Uint8Array): CursorDecode {
  if (b.length === 0) return { ok: false, reason: 'empty cursor' };
  if (b[0] !== CURSOR_VERSION) return { ok: false, reason: `unknown cursor version ${b[0]}` };
  const pos: Position = new Map();
  let o = 1;
  let lastTag = 0;
  while (o < b.length) {
    const tag = b[o++]!;
    if (!isTopicTag(tag)) return { ok: false, reason: `unknown topic tag ${tag}` };
    if (tag <= lastTag) return { ok: false, reason: 'topic tags out of order' };
    lastTag = tag;
    const n = readVarint(b, o);
    if (n === null || n[0] < 1 || n[0] > MAX_PARTITIONS) return { ok: false, reason: 'bad partition count' };
    o = n[1];
    const offs: number[] = [];
    for (let i = 0; i < n[0]; i++) {
      const v = readVarint(b, o);
      if (v === null) return { ok: false, reason: 'truncated offset' };
      offs.push(v[0]);
      o = v[1];
    }
    pos.set(tag, offs);
  }
  if (!pos.has(TopicTag.transactions)) return { ok: false, reason: 'no transactions topic in cursor' };
  return { ok: true, position: pos };
}

/** How people pass cursors around (the CLI, logs of the client's own): base64url without padding. */
export function cursorText(c: Uint8Array): string {
  return Buffer.from(c.buffer, c.byteOffset, c.byteLength).toString('base64url');
}

export function parseCursorText(s: string): CursorDecode {
  if (!/^[A-Za-z0-9_-]+$/.test(s)) return { ok: false, reason: 'not base64url' };
  return decodeCursor(Buffer.from(s, 'base64url'));
}

export function clonePosition(p: Position): Position {
  const out: Position = new Map();
  for (const [t, offs] of p) out.set(t, offs.slice());
  return out;
}

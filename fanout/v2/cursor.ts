// A v2 stream position: for each stream topic, the next bus offset of every partition. Everything before those
// offsets has been delivered to the stream or filtered out; nothing at or after them has. Offsets are the bus's,
// so every fanout instance reading the same topics reads a cursor the same way (resume anywhere) — as long as it
// reads the same logs: an offset is a position in one log, and the embedded bus starts new logs at every start
// (Kafka: a topic deleted and recreated, a new cluster behind the same brokers). So a cursor names the log of
// each topic it holds a position in, and carries what bus/log-check.ts needs to tell a recreated Kafka topic.
//
// Bytes (proto/stream_v2.proto, "Cursor encoding"):
//   +0  u8      CURSOR_VERSION (2)
//   per topic, in tag order:
//       u8      topic tag (TopicTag)
//       varint  partition count P (1..MAX_PARTITIONS)
//       P × varint  next offset of partitions 0..P-1 (< 2^53)
//       4 bytes the topic's log: the first 4 bytes of SHA-256 of its LogIdentity id (bus/bus.ts), big-endian
//       varint  B: the newest of the partitions' markers (ms since epoch), 0 when none has one
//       P × varint  per partition, B − marker + 1, or 0 without a marker. A marker is an append time no earlier
//               than that of every record below the partition's offset (the fanout's last record read there): on
//               a log whose id survives recreation (Kafka), the first record appended after it must come at or
//               after the offset, else the topic was recreated (bus/log-check.ts). The embedded bus's ids change at
//               every start, so its cursors carry no markers (all 0).
// Version 1 (before logs were named) is the same without the log, B and markers: still decoded (logs: null), and
// the hub refuses it as of an unproved log (hub.ts resolveStart, start-check.ts).
// A topic the stream does not read is left out; a cursor without the transactions topic is refused. Tag 3
// (stream.slot-status) came later: a cursor without it is still valid, and the hub places the status topic from
// the cursor's slots position (hub.ts, resolveStart). Tag 4 (stream.entries) came later too: cursors made before
// it have no entries tag and are still valid (the hub decides what a missing topic means).

import { createHash } from 'node:crypto';

export const CURSOR_VERSION = 2;
/** Cursors made before they named their logs. */
export const CURSOR_VERSION_UNLOGGED = 1;
/** Tags of the stream topics; the order they appear in a cursor. */
export const TopicTag = { transactions: 1, slots: 2, slotStatus: 3, entries: 4 } as const;
export type TopicTag = (typeof TopicTag)[keyof typeof TopicTag];
const KNOWN_TAGS: ReadonlySet<number> = new Set(Object.values(TopicTag));
const isTopicTag = (t: number): t is TopicTag => KNOWN_TAGS.has(t);
/** bus/config.ts allows up to 1024 stream partitions. */
const MAX_PARTITIONS = 1024;

/** Next offset per partition, per topic tag. Arrays are owned by whoever built the position. */
export type Position = Map<TopicTag, number[]>;

/**
 * Per topic, per partition, the marker of a position: the append time of the record just below the partition's
 * offset (0: not known). A function of the position, so a resumed stream's cursors are byte for byte those of an
 * uninterrupted one.
 */
export type Marks = Map<TopicTag, number[]>;

export function cloneMarks(m: Marks): Marks {
  const out: Marks = new Map();
  for (const [t, a] of m) out.set(t, a.slice());
  return out;
}

/**
 * Marks for `pos`, each taken from the first source whose position has the same offset there (its mark is of that
 * very offset), else 0.
 */
export function marksFor(pos: Position, sources: ReadonlyArray<readonly [Position, Marks | ReadonlyMap<TopicTag, readonly number[]>]>): Marks {
  const out: Marks = new Map();
  for (const [tag, offs] of pos) {
    out.set(
      tag,
      offs.map((o, p) => {
        for (const [sp, sm] of sources) if (sp.get(tag)?.[p] === o) return sm.get(tag)?.[p] ?? 0;
        return 0;
      }),
    );
  }
  return out;
}

/** The log of one topic as a cursor names it: a 32-bit hash of the log id, and a marker per partition (0: none). */
export interface TopicLog {
  log: number;
  marks: readonly number[];
}
export type CursorLogs = ReadonlyMap<TopicTag, TopicLog>;

/** What an encoder stamps a position with: each topic's log, and a partition's marker for an offset (0: none). */
export interface CursorStamp {
  log(tag: TopicTag): number;
  mark(tag: TopicTag, partition: number, offset: number): number;
}

/** A log id as a cursor carries it. */
export function logHash(id: string): number {
  return createHash('sha256').update(id).digest().readUInt32BE(0);
}

/** The stamp of a decoded cursor, to encode its own offsets (or a subset of its topics) again. */
export function stampOf(logs: CursorLogs): CursorStamp {
  return {
    log: (tag) => logs.get(tag)?.log ?? 0,
    mark: (tag, p) => logs.get(tag)?.marks[p] ?? 0,
  };
}

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

/**
 * The cursor of `pos`, naming each topic's log as `stamp` says; with `stamp` null, a version 1 cursor (what
 * servers before logs were named made: tests of that case build one).
 */
export function encodeCursor(pos: Position, stamp: CursorStamp | null): Buffer {
  const tags = pos.size === 1 ? [...pos.keys()] : [...pos.keys()].sort((a, b) => a - b);
  let size = 1;
  // Each partition's marker, once, in tag then partition order (the encoder is on the hub's per-record path).
  let n = 0;
  for (const t of tags) {
    const offs = pos.get(t)!;
    size += 1 + varintSize(offs.length);
    for (const o of offs) size += varintSize(o);
    if (stamp === null) continue;
    let base = 0;
    if (scratch.length < n + offs.length) scratch = new Float64Array(Math.max(scratch.length * 2, n + offs.length));
    for (let p = 0; p < offs.length; p++) {
      const m = stamp.mark(t, p, offs[p]!);
      scratch[n + p] = m;
      if (m > base) base = m;
    }
    size += 4 + varintSize(base);
    for (let p = 0; p < offs.length; p++) {
      const m = scratch[n + p]!;
      size += m === 0 ? 1 : varintSize(base - m + 1);
    }
    n += offs.length;
  }
  const buf = Buffer.allocUnsafe(size);
  buf[0] = stamp === null ? CURSOR_VERSION_UNLOGGED : CURSOR_VERSION;
  let o = 1;
  n = 0;
  for (const t of tags) {
    const offs = pos.get(t)!;
    buf[o++] = t;
    o = writeVarint(buf, o, offs.length);
    for (const x of offs) o = writeVarint(buf, o, x);
    if (stamp === null) continue;
    const log = stamp.log(t) >>> 0;
    buf[o] = log >>> 24;
    buf[o + 1] = (log >>> 16) & 0xff;
    buf[o + 2] = (log >>> 8) & 0xff;
    buf[o + 3] = log & 0xff;
    o += 4;
    let base = 0;
    for (let p = 0; p < offs.length; p++) if (scratch[n + p]! > base) base = scratch[n + p]!;
    o = writeVarint(buf, o, base);
    for (let p = 0; p < offs.length; p++) {
      const m = scratch[n + p]!;
      o = writeVarint(buf, o, m === 0 ? 0 : base - m + 1);
    }
    n += offs.length;
  }
  return buf;
}

/** Markers of the cursor being encoded (one encode at a time: no await inside). */
let scratch = new Float64Array(64);

/** logs: null for a version 1 cursor (made before cursors named their logs). */
export type CursorDecode = { ok: true; position: Position; logs: Map<TopicTag, TopicLog> | null } | { ok: false; reason: string };

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
  const version = b[0]!;
  if (version !== CURSOR_VERSION && version !== CURSOR_VERSION_UNLOGGED) return { ok: false, reason: `unknown cursor version ${version}` };
  const pos: Position = new Map();
  const logs = version === CURSOR_VERSION ? new Map<TopicTag, TopicLog>() : null;
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
    if (logs === null) continue;
    if (o + 4 > b.length) return { ok: false, reason: 'truncated log' };
    const log = Buffer.from(b.buffer, b.byteOffset, b.byteLength).readUInt32BE(o);
    o += 4;
    const base = readVarint(b, o);
    if (base === null) return { ok: false, reason: 'truncated marker' };
    o = base[1];
    const marks: number[] = [];
    for (let i = 0; i < n[0]; i++) {
      const v = readVarint(b, o);
      if (v === null || v[0] > base[0] + 1) return { ok: false, reason: 'bad marker' };
      marks.push(v[0] === 0 ? 0 : base[0] - v[0] + 1);
      o = v[1];
    }
    logs.set(tag, { log, marks });
  }
  if (!pos.has(TopicTag.transactions)) return { ok: false, reason: 'no transactions topic in cursor' };
  return { ok: true, position: pos, logs };
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

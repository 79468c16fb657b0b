// Some SDK versions send each transaction twice on one connection: as a datagram and on a stream. That is one
// submission, not a resend (a resend chasing a landing is forwarded again by the pipeline's cache rule). So
// the second copy of a pair is answered with the first copy's status and never reaches the pipeline.
//
// A pair = the same bytes on the same connection, one copy by datagram and one by stream (either order),
// within `windowMs`. A third copy starts a new pair. Keyed by the first 65 bytes (the signature count and
// the first signature, which covers the message) plus the length. Bounded: oldest entries go first.

type Path = 'stream' | 'datagram';

interface Entry {
  path: Path;
  status: number;
  at: number;
}

export class Twins {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly windowMs: number, private readonly maxEntries = 65_536) {}

  private static key(conn: number, tx: Buffer): string {
    return `${conn}:${tx.length}:${tx.toString('latin1', 0, Math.min(tx.length, 65))}`;
  }

  /** The status of this copy's twin (the other path, same connection, in the window), consuming the pair. */
  take(conn: number, tx: Buffer, path: Path, now: number): number | undefined {
    if (this.windowMs <= 0) return undefined;
    const k = Twins.key(conn, tx);
    const e = this.entries.get(k);
    if (e === undefined || e.path === path || now - e.at > this.windowMs) return undefined;
    this.entries.delete(k);
    return e.status;
  }

  /** Remembers a copy that went through the pipeline, so its twin can be recognised. */
  note(conn: number, tx: Buffer, path: Path, status: number, now: number): void {
    if (this.windowMs <= 0) return;
    const k = Twins.key(conn, tx);
    this.entries.delete(k); // re-insert at the end: Map order is the eviction order
    this.entries.set(k, { path, status, at: now });
    for (const [old, e] of this.entries) {
      if (this.entries.size <= this.maxEntries && now - e.at <= this.windowMs) break;
      this.entries.delete(old);
    }
  }

  get size(): number {
    return this.entries.size;
  }
}

// How many streams one peer may hold: per connection (one client cannot open thousands of streams on one
// HTTP/2 connection), per IP address (nor across many connections), and in the whole process. Counted when a
// stream opens and released exactly once when it ends; a refused stream is never counted.

export interface StreamOrigin {
  /** Identifies the connection (the peer's address:port). */
  connection: string;
  /** The peer's IP address. */
  ip: string;
}

export interface StreamCaps {
  maxStreamsPerConnection: number;
  maxStreamsPerIp: number;
  maxStreams: number;
}

export type StreamRefusal = { per: 'connection' | 'ip' | 'server'; max: number };

function bump(m: Map<string, number>, k: string, d: number): void {
  const n = (m.get(k) ?? 0) + d;
  if (n <= 0) m.delete(k);
  else m.set(k, n);
}

export class StreamLimits {
  private readonly perConnection = new Map<string, number>();
  private readonly perIp = new Map<string, number>();
  private total = 0;

  constructor(private readonly caps: StreamCaps) {}

  /** Counts the stream in, or says which cap refuses it (nothing is counted then). */
  admit(o: StreamOrigin | undefined): StreamRefusal | null {
    const c = this.caps;
    if (this.total >= c.maxStreams) return { per: 'server', max: c.maxStreams };
    if (o !== undefined) {
      if ((this.perConnection.get(o.connection) ?? 0) >= c.maxStreamsPerConnection) return { per: 'connection', max: c.maxStreamsPerConnection };
      if ((this.perIp.get(o.ip) ?? 0) >= c.maxStreamsPerIp) return { per: 'ip', max: c.maxStreamsPerIp };
      bump(this.perConnection, o.connection, 1);
      bump(this.perIp, o.ip, 1);
    }
    this.total++;
    return null;
  }

  release(o: StreamOrigin | undefined): void {
    this.total--;
    if (o === undefined) return;
    bump(this.perConnection, o.connection, -1);
    bump(this.perIp, o.ip, -1);
  }

  get connections(): number {
    return this.perConnection.size;
  }

  get ips(): number {
    return this.perIp.size;
  }
}

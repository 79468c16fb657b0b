import type { HeaderField } from './hpack';
import { H2Error } from './frame';
import type { H2Stream } from './stream';

// gRPC over one HTTP/2 stream (the gRPC-over-HTTP/2 protocol: length-prefixed messages, status in trailers),
// the part a server of long-lived bidi streams needs:
//   - request messages are cut at their 5-byte prefixes and handed over whole (a copy: requests are few and may
//     outlive the socket's read buffer); larger than maxMessageBytes → RESOURCE_EXHAUSTED, as grpc-js says it;
//   - compressed requests are refused (UNIMPLEMENTED): we announce `grpc-accept-encoding: identity`;
//   - responses are written as they come, already framed (v1/encoder.ts framedEncoder); `grpc-encoding` says what a
//     compressed response (flag 1) is in: identity unless the application set `encoding` before the headers;
//   - the status goes in trailers after every queued response, or alone (trailers-only) before any header;
//   - `grpc-timeout` is honoured (DEADLINE_EXCEEDED), as grpc-js does.
// Memory held for partial requests is bounded per stream (maxMessageBytes) and for the process (RequestBudget).

const PREFIX_SZ = 5;
const FLAG_COMPRESSED = 1;

/** gRPC status codes used here (the rest come from the application). */
export const GrpcCode = { OK: 0, INTERNAL: 13, UNIMPLEMENTED: 12, RESOURCE_EXHAUSTED: 8, DEADLINE_EXCEEDED: 4 } as const;

export interface GrpcStatus {
  code: number;
  details: string;
  /** Extra trailers (lower-case names; `-bin` values already base64). */
  trailers?: ReadonlyArray<readonly [string, string]>;
}

/** The call's connection as a call may act on it (connection.ts H2Connection). */
export interface CallConnection {
  goAwayAndClose(code: number, debug: string): void;
}

/** Bytes of partial requests held by all calls of the process. */
export class RequestBudget {
  bytes = 0;
  constructor(readonly max: number) {}
}

const RESPONSE_HEADERS: ReadonlyArray<readonly [string, string]> = [
  [':status', '200'],
  ['content-type', 'application/grpc'],
  ['grpc-encoding', 'identity'],
  ['grpc-accept-encoding', 'identity'],
];

/** grpc-message is percent-encoded UTF-8 (gRPC over HTTP/2: everything outside 0x20–0x7e, and '%'). */
export function percentEncode(s: string): string {
  if (/^[\x20-\x24\x26-\x7e]*$/.test(s)) return s;
  let out = '';
  for (const b of Buffer.from(s, 'utf8')) out += b >= 0x20 && b <= 0x7e && b !== 0x25 ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  return out;
}

const TIMEOUT_UNIT_MS: Readonly<Record<string, number>> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 0.001, n: 0.000001 };

/** `grpc-timeout` (1–8 digits and a unit) in ms; undefined when absent or malformed. */
export function parseGrpcTimeout(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const m = /^(\d{1,8})([HMSmun])$/.exec(v);
  return m === null ? undefined : Number(m[1]) * TIMEOUT_UNIT_MS[m[2]!]!;
}

/** The response headers for a response encoding (`identity`, `gzip`, `zstd`). */
function responseHeaders(encoding: string): ReadonlyArray<readonly [string, string]> {
  return encoding === 'identity' ? RESPONSE_HEADERS : RESPONSE_HEADERS.map(([n, v]) => [n, n === 'grpc-encoding' ? encoding : v] as const);
}

export class GrpcCall {
  /** The encoding of compressed responses, announced in grpc-encoding: set before the headers go. */
  encoding = 'identity';
  onMessage: ((m: Buffer) => void) | null = null;
  /** The client cancelled (RST_STREAM) or the connection went; not called after our own end. */
  onGone: (() => void) | null = null;
  /** The client half-closed its side. */
  onHalfClose: (() => void) | null = null;
  private headersSent = false;
  private over = false;
  // The message being read: its 5-byte prefix, then its body.
  private prefix = Buffer.alloc(PREFIX_SZ);
  private prefixHave = 0;
  private body: Buffer | null = null;
  private bodyHave = 0;
  private deadline: NodeJS.Timeout | undefined;

  constructor(
    private readonly stream: H2Stream,
    private readonly headers: HeaderField[],
    /** The peer as `address:port` (grpc-js's getPeer() form). */
    readonly peer: string,
    readonly path: string,
    private readonly maxMessageBytes: number,
    private readonly budget: RequestBudget,
    private readonly connection: CallConnection | null = null,
  ) {
    stream.onData = (b, s, e) => this.onData(b, s, e);
    stream.onRemoteEnd = () => this.onHalfClose?.();
    stream.onGone = () => this.gone();
    const ms = parseGrpcTimeout(this.header('grpc-timeout'));
    if (ms !== undefined) {
      this.deadline = setTimeout(() => this.abort({ code: GrpcCode.DEADLINE_EXCEEDED, details: 'Deadline exceeded' }), Math.max(0, Math.ceil(ms)));
      this.deadline.unref();
    }
  }

  /** First value of a request header (names are lower-case). */
  header(name: string): string | undefined {
    for (const [n, v] of this.headers) if (n === name) return v;
    return undefined;
  }

  sendHeaders(): void {
    if (this.headersSent || this.over) return;
    this.headersSent = true;
    this.stream.respond(responseHeaders(this.encoding));
  }

  /**
   * Where responses go: the HTTP/2 stream itself, once the headers are on their way. It takes messages that already
   * carry their gRPC prefix, write() false meaning wait for 'drain', and drops them once the call is over.
   */
  sink(): H2Stream {
    this.sendHeaders();
    return this.stream;
  }

  /** Ends the call with a status (OK when absent), after everything written. */
  end(status: GrpcStatus = { code: GrpcCode.OK, details: '' }): void {
    if (this.over) return;
    this.finish();
    const fields: Array<readonly [string, string]> = this.headersSent ? [] : [...responseHeaders(this.encoding)];
    this.headersSent = true;
    fields.push(['grpc-status', String(status.code)]);
    if (status.details !== '') fields.push(['grpc-message', percentEncode(status.details)]);
    if (status.trailers !== undefined) fields.push(...status.trailers);
    this.stream.end(fields);
  }

  /**
   * Ends the call with a status, then the whole connection: GOAWAY NO_ERROR (with `debug`) after the status, then
   * close. Other calls on the connection are gone with it (their onGone).
   */
  endAndCloseConnection(status: GrpcStatus, debug: string): void {
    this.end(status);
    this.connection?.goAwayAndClose(H2Error.NO_ERROR, debug);
  }

  /** RST_STREAM CANCEL: for a status that cannot get through (the peer's window stays shut). */
  reset(): void {
    this.finish();
    this.stream.reset(H2Error.CANCEL);
  }

  /**
   * Ends the call on its own account (deadline, a request it cannot read). The application is told as by a
   * cancel (onGone): it would otherwise keep a subscriber writing into a call that is over.
   */
  abort(status: GrpcStatus): void {
    if (this.over) return;
    const gone = this.onGone;
    this.end(status);
    gone?.();
  }

  private gone(): void {
    if (this.over) return;
    this.finish();
    this.onGone?.();
  }

  private finish(): void {
    this.over = true;
    if (this.deadline !== undefined) clearTimeout(this.deadline);
    this.releaseBody();
    this.onMessage = null;
  }

  private releaseBody(): void {
    if (this.body !== null) this.budget.bytes -= this.body.length;
    this.body = null;
    this.bodyHave = 0;
    this.prefixHave = 0;
  }

  private onData(b: Buffer, start: number, end: number): void {
    let at = start;
    while (at < end && !this.over) {
      if (this.body === null) {
        const take = Math.min(PREFIX_SZ - this.prefixHave, end - at);
        b.copy(this.prefix, this.prefixHave, at, at + take);
        this.prefixHave += take;
        at += take;
        if (this.prefixHave < PREFIX_SZ) return;
        const flag = this.prefix[0]!;
        const len = this.prefix.readUInt32BE(1);
        if (flag === FLAG_COMPRESSED) return this.abort({ code: GrpcCode.UNIMPLEMENTED, details: 'compressed requests are not supported: send them uncompressed (grpc-encoding identity)' });
        if (flag !== 0) return this.abort({ code: GrpcCode.INTERNAL, details: `message flag ${flag} is neither 0 nor 1` });
        if (len > this.maxMessageBytes) return this.abort({ code: GrpcCode.RESOURCE_EXHAUSTED, details: `Received message larger than max (${len} vs. ${this.maxMessageBytes})` });
        if (this.budget.bytes + len > this.budget.max) return this.abort({ code: GrpcCode.RESOURCE_EXHAUSTED, details: 'the server holds its maximum of partially received requests; retry later' });
        this.budget.bytes += len;
        this.body = Buffer.allocUnsafe(len);
        this.bodyHave = 0;
      }
      const take = Math.min(this.body.length - this.bodyHave, end - at);
      b.copy(this.body, this.bodyHave, at, at + take);
      this.bodyHave += take;
      at += take;
      if (this.bodyHave === this.body.length) {
        const msg = this.body;
        this.releaseBody();
        this.onMessage?.(msg);
      }
    }
  }
}

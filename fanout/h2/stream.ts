// One HTTP/2 request stream of the fanout's own server, seen from the server: what we still have to send on
// it (response bytes waiting for the next flush or for the peer's window) and the peer's send window.
//
// The send queue holds references to the caller's buffers (a response is encoded once and shared by every
// subscriber it goes to); the connection copies them into one output buffer per flush, several messages per
// DATA frame, so a write costs an array push here and a copy there — no frame, request or callback object per
// message. The queue is bounded by `highWater`: write() returns false once the stream holds more than that or
// more than the peer lets through, and the owner (SubscriberQueue) keeps the rest under its own bounds until
// 'drain'.

export const enum StreamState {
  /** Request headers read; we may send. */
  Open,
  /** Our END_STREAM (trailers) is queued: nothing more may be written. */
  Ending,
  /**
   * Our END_STREAM is sent and the peer has not sent its own: half-closed (local), RFC 9113 §5.1. The application
   * is done with the stream; the connection keeps it to judge what the peer still sends on it (flow control,
   * content-length, trailers) until the peer's END_STREAM or RST_STREAM closes it.
   */
  Ended,
  /** Reset (by either side) or its connection is gone: everything queued was dropped. */
  Closed,
}

/** What the connection offers a stream; implemented by connection.ts. */
export interface StreamOwner {
  /** The stream has something to send (data it may send now, headers, trailers, a reset). */
  schedule(s: H2Stream): void;
  /** Queues a control frame for this stream (headers, RST_STREAM) ahead of any data of later flushes. */
  control(frame: Buffer): void;
  headerBlock(fields: ReadonlyArray<readonly [string, string]>, streamId: number, endStream: boolean): Buffer;
  resetStream(s: H2Stream, code: number): void;
}

export class H2Stream {
  state = StreamState.Open;
  /** The peer's window for our DATA on this stream (may go negative after a SETTINGS change). */
  window: number;
  /** Set once the peer sent END_STREAM (a half-close; the stream stays ours to write). */
  remoteEnded = false;
  /** In the connection's list of streams with something to send. */
  scheduled = false;
  /** Trailers (an encoded header frame with END_STREAM) to send once the queue is empty. */
  trailers: Buffer | null = null;
  /** Request bytes delivered to the application and not yet returned to the peer's window. */
  unacked = 0;
  /** DATA bytes sent since the peer's last WINDOW_UPDATE on this stream (one that returns none did nothing). */
  sentSinceUpdate = 0;
  /** Some DATA of the response left (a stream ended without any was answered with a status only). */
  dataSent = false;
  /** Our receive window on this stream (set by the connection). */
  recvWindow = 0;
  /** The request's content-length, -1 when it has none; `received` counts its DATA bytes against it. */
  contentLength = -1;
  received = 0;

  // The send queue: buffers [head, length) of q, the first with `headOff` bytes already sent.
  q: Buffer[] = [];
  head = 0;
  headOff = 0;
  queued = 0;

  onData: ((b: Buffer, start: number, end: number) => void) | null = null;
  onRemoteEnd: (() => void) | null = null;
  /** Reset by the peer, or the connection went away; not called for our own reset or a normal end. */
  onGone: (() => void) | null = null;
  private drainListeners: Array<() => void> = [];
  needDrain = false;

  constructor(
    readonly id: number,
    initialWindow: number,
    private readonly owner: StreamOwner,
    private readonly highWater: number,
  ) {
    this.window = initialWindow;
  }

  /** Response headers (no END_STREAM). */
  respond(fields: ReadonlyArray<readonly [string, string]>): void {
    if (this.state !== StreamState.Open) return;
    this.owner.control(this.owner.headerBlock(fields, this.id, false));
  }

  /** Queues bytes of DATA. false: hold further writes until 'drain'. */
  write(b: Buffer): boolean {
    if (this.state !== StreamState.Open) return true; // over; the owner hears of it through onGone or its own end
    this.q.push(b);
    this.queued += b.length;
    if (!this.scheduled) this.owner.schedule(this);
    if (this.queued > this.highWater || this.queued > this.window) {
      this.needDrain = true;
      return false;
    }
    return true;
  }

  once(event: 'drain', listener: () => void): this {
    this.drainListeners.push(listener);
    return this;
  }

  /** Trailers with END_STREAM after everything queued. `fields` are the trailers (or a trailers-only response). */
  end(fields: ReadonlyArray<readonly [string, string]>): void {
    if (this.state !== StreamState.Open) return;
    this.state = StreamState.Ending;
    this.trailers = this.owner.headerBlock(fields, this.id, true);
    if (!this.scheduled) this.owner.schedule(this);
  }

  /** RST_STREAM: drops what is queued, frees the stream at once. */
  reset(code: number): void {
    if (this.state === StreamState.Closed) return;
    this.owner.resetStream(this, code);
  }

  /** Our END_STREAM is out while the peer's side is open: the application's callbacks are let go (the call is over). */
  localEnded(): void {
    this.discard();
    this.state = StreamState.Ended;
    this.onData = null;
    this.onRemoteEnd = null;
    this.onGone = null;
  }

  /** Everything queued is dropped; called by the connection when the stream is over for any reason. */
  discard(): void {
    this.state = StreamState.Closed;
    this.q = [];
    this.head = 0;
    this.headOff = 0;
    this.queued = 0;
    this.trailers = null;
    this.drainListeners = [];
    this.needDrain = false;
  }

  /** The connection sent queued bytes; below the mark again, writers may resume. */
  maybeDrain(): void {
    if (!this.needDrain || this.state !== StreamState.Open || this.queued > this.highWater || this.queued > this.window) return;
    this.needDrain = false;
    const ls = this.drainListeners;
    if (ls.length === 0) return;
    this.drainListeners = [];
    for (const l of ls) l();
  }
}

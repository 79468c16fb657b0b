import type { Socket } from 'node:net';
import {
  CLIENT_PREFACE,
  DEFAULT_WINDOW,
  Flag,
  FRAME_HEADER_SZ,
  FrameType,
  goawayFrame,
  H2Error,
  headerFrames,
  MAX_MAX_FRAME_SIZE,
  MAX_WINDOW,
  MIN_MAX_FRAME_SIZE,
  PING_PAYLOAD_SZ,
  pingFrame,
  PRIORITY_SZ,
  readFrameHeader,
  RST_STREAM_SZ,
  rstStreamFrame,
  Setting,
  SETTING_SZ,
  SETTINGS_ACK,
  settingsFrame,
  unpaddedRange,
  WINDOW_UPDATE_SZ,
  windowUpdateFrame,
  writeFrameHeader,
  type FrameHeader,
} from './frame';
import { encodeHeaderBlock, HpackDecoder, type HeaderField } from './hpack';
import { checkRequestHeaders, checkTrailers } from './request-headers';
import { scheduleFlush, type Flushable } from './flush';
import { H2Stream, StreamState, type StreamOwner } from './stream';
import { Budget } from './budget';
import { readIntoShared } from './read-buffer';

// One HTTP/2 connection of the fanout's own server (RFC 9113), as much of the protocol as a gRPC server of
// long-lived streams needs and no more: no push, no priorities, no dynamic table on the sending side.
//
// Receiving: the socket's bytes are cut into frames in place; a frame longer than our MAX_FRAME_SIZE ends the
// connection before it is buffered. A frame split across reads is gathered into one buffer of its own size, each
// byte copied once (a peer that drips bytes costs linear, not quadratic, work), so besides the read in hand at
// most one partial frame is held. Request DATA is handed to the stream at once and its window given back as soon
// as half of it is used.
//
// Stream states (RFC 9113 §5.1), as this server sees them (see `phase`):
//   idle                 id above every id the peer has used: only HEADERS (opens it) and PRIORITY are allowed
//   open                 in `streams`, the peer still sending
//   half-closed (remote) in `streams` with remoteEnded: DATA or HEADERS from the peer → STREAM_CLOSED
//   half-closed (local)  in `streams`, our END_STREAM queued (H2Stream Ending) or sent (Ended): the peer may still
//                        send, and what it sends is judged as on an open stream (flow control, content-length,
//                        trailers) until its END_STREAM or RST_STREAM closes the stream. nghttp2 keeps such streams
//                        too; closing them at our END_STREAM made the answer to a frame that follows a request
//                        depend on whether it arrived before or after our response was written.
//   closed               not in `streams`; how it closed is remembered for the most recent streams (`closedHow`):
//                        after the peer's END_STREAM any DATA/HEADERS is a connection error STREAM_CLOSED, after
//                        its RST_STREAM a stream error STREAM_CLOSED, after ours the frames are ignored (they may
//                        have been in flight); HEADERS on a lower id the peer never used is a PROTOCOL_ERROR.
// Sending: streams queue references to response buffers; once per turn (flush.ts) everything sendable — control
// frames first, then each scheduled stream's data within its window, the connection window and the socket's
// backlog bound, then trailers of streams whose data is all out — is copied into one buffer and written once.
//
// Budgets (budget.ts), per connection, as nghttp2 has them: streams that end without their response (the peer's
// RST_STREAM, streams we refuse or reset for the peer's errors: rapid reset, CVE-2023-44487, and its variants)
// spend the reset budget; frames that make us work without moving anything forward (empty DATA, PRIORITY,
// WINDOW_UPDATE that returns no window we used, SETTINGS and PING past the first few, unknown frames, frames on
// streams we closed) spend the glitch budget. Either one exhausted ends the connection with GOAWAY
// ENHANCE_YOUR_CALM, naming what spent most of it (`Flood`).
//
// Bounds (heldBytes() sums what they bound): a peer that does not read stops getting data at maxOutboundBytes of
// unsent socket bytes (its streams push back to their subscriber queues); one that keeps asking for control
// answers (PING, SETTINGS, frames answered with RST_STREAM) without reading them is disconnected at
// maxControlBytes, and one that asks for more than MAX_ANSWERS_PER_TURN in one turn at once. A header block is
// bounded in bytes, in frames and in time. Streams per connection (advertised as SETTINGS_MAX_CONCURRENT_STREAMS)
// and new streams per second are capped.

export interface ConnectionLimits {
  /** Our SETTINGS_MAX_FRAME_SIZE (what we accept). */
  maxFrameSize: number;
  /** Our receive window per stream and for the connection. */
  initialWindow: number;
  /** Decoded header list size (RFC 7541 §4.1 sizes) per request. */
  maxHeaderListBytes: number;
  /** Streams open at once; beyond, new streams are refused (RST_STREAM REFUSED_STREAM). */
  maxOpenStreams: number;
  /** New streams per second; beyond, the connection is closed (ENHANCE_YOUR_CALM): the rapid-reset bound. */
  maxNewStreamsPerSec: number;
  /** Bytes a stream may queue before write() asks the writer to wait. */
  streamHighWater: number;
  /** Unsent socket bytes beyond which no more data is written to the socket until it drains. */
  maxOutboundBytes: number;
  /** Unsent socket bytes at which a peer that does not read its control answers is disconnected. */
  maxControlBytes: number;
  /** A header block begun (HEADERS without END_HEADERS) must end within this (ms), else ENHANCE_YOUR_CALM. */
  headerBlockTimeoutMs: number;
  /** Our SETTINGS must be acknowledged within this (ms), else SETTINGS_TIMEOUT (RFC 9113 §6.5.3). */
  settingsAckTimeoutMs: number;
  /** Streams ended without their response (reset by the peer, refused or reset by us): tokens at most / refilled per second. */
  resetBurst: number;
  resetRate: number;
  /** Frames that cost work without progress: tokens at most / refilled per second. */
  glitchBurst: number;
  glitchRate: number;
}

/** What spent a connection's reset budget. */
export type ResetKind = 'client_reset' | 'refused' | 'stream_error' | 'no_response';
/** What spent a connection's glitch budget. */
export type GlitchKind = 'empty_data' | 'window_update' | 'priority' | 'settings' | 'ping' | 'unknown_frame' | 'ignored_frame';
/** Why a connection was closed over a budget: the kind that spent most of it (a metric label, a log field). */
export type Flood = ResetKind | GlitchKind;

export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = {
  maxFrameSize: MIN_MAX_FRAME_SIZE,
  initialWindow: 1 << 20,
  maxHeaderListBytes: 16 << 10,
  maxOpenStreams: 1024,
  maxNewStreamsPerSec: 2000,
  streamHighWater: 16 << 10,
  maxOutboundBytes: 256 << 10,
  maxControlBytes: 1 << 20,
  // A client writes a whole header block at once; 5 s is far beyond any network delay between its frames, and
  // short enough that a block left open cannot pin the connection's decoder state for long.
  headerBlockTimeoutMs: 5_000,
  // As the keepalive timeout of the transports: a peer that cannot ack in 10 s is as good as gone.
  settingsAckTimeoutMs: 10_000,
  // nghttp2's stream reset rate limiter (lib/nghttp2_session.h, NGHTTP2_DEFAULT_STREAM_RESET_BURST/_RATE, its fix
  // for CVE-2023-44487): 1000 resets at once, 33 more a second. nghttp2 counts every RST_STREAM a client sends; we
  // count those and the streams we refuse or reset for the client's errors (Rust h2 bounds those apart, by
  // max_local_error_reset_streams, 1024 a connection; Go x/net/http2 ends a connection whose reset-early streams
  // queue past 4 × MAX_CONCURRENT_STREAMS). A gRPC client cancels a stream with one RST_STREAM: 33 cancels a
  // second for as long as it likes, 1000 in a burst.
  resetBurst: 1000,
  resetRate: 33,
  // nghttp2's glitch rate limiter (NGHTTP2_DEFAULT_GLITCH_BURST/_RATE, nghttp2 1.66): empty DATA without
  // END_STREAM, PRIORITY, unknown frames, frames answered with a stream error, header blocks it ignores. We count
  // those and the floods nghttp2 bounds otherwise or not at all (WINDOW_UPDATE that returns no window we used,
  // SETTINGS past the first, PINGs). Rust h2 allows 100 empty DATA frames per connection for life.
  glitchBurst: 10_000,
  glitchRate: 330,
};

export interface ConnectionHandler {
  /** A new request stream and its header list (pseudo-headers first, as sent). */
  onStream(stream: H2Stream, headers: HeaderField[], conn: H2Connection): void;
  /** The connection is gone (every stream's onGone has been called). */
  onClose(conn: H2Connection): void;
  /**
   * We ended the connection with a connection error (the GOAWAY code and its debug text), or for not reading;
   * `flood` when a budget ran out, naming what spent most of it.
   */
  onError?(conn: H2Connection, code: number, debug: string, flood?: Flood): void;
}

/** Frames we send: the biggest payload in one DATA frame even if the peer allows more (fewer, larger copies gain little). */
const MAX_SEND_FRAME = 64 << 10;
/**
 * A header block (HEADERS + CONTINUATION) may be this much larger than the decoded list bound. A block whose list
 * fits the bound is usually smaller than the list (each field counts 32 bytes of overhead in the list, a few
 * prefix octets in the block), but not always (raw strings, long prefix integers, size updates add octets and no
 * list bytes): 2× is a margin for such encoders, not a proof. Past it the connection ends: we will not buffer it.
 */
const BLOCK_FACTOR = 2;
/**
 * CONTINUATION frames per header block, as nghttp2 (NGHTTP2_DEFAULT_MAX_CONTINUATIONS, its fix for
 * CVE-2024-28182): a block within BLOCK_FACTOR × 16 KiB needs at most 2 at the minimum frame size, so 8 refuses
 * no real encoder, and a flood of empty or tiny frames ends after 8 instead of being held frame by frame.
 */
const MAX_CONTINUATIONS = 8;
/**
 * Frames queued in one turn that answer the peer (SETTINGS ACK, PING ACK, RST_STREAM for its errors), as
 * nghttp2's max_outbound_ack (1000, its fix for CVE-2019-9512/9515): a peer may not turn one read into an
 * unbounded queue of answers. A client that pings or resets streams this fast within one read is attacking.
 */
const MAX_ANSWERS_PER_TURN = 1000;
/**
 * Closed streams whose way of closing is remembered, to answer a late frame on them as RFC 9113 §5.1 says; the
 * oldest is forgotten first (a frame on it is then ignored). 256 ids is ~10 KiB per connection and far more
 * than the streams a client closes between sending a frame and the frame's arrival.
 */
const MAX_CLOSED_REMEMBERED = 256;
/** What a Buffer object costs besides its bytes, for heldBytes(): an estimate, not a measurement of V8's layout. */
const BUFFER_OVERHEAD = 96;
/** Every header block we send starts with a dynamic table size update to 0: our encoder never indexes. */
const TABLE_SIZE_ZERO = Buffer.from([0x20]);

/** How a closed stream closed (RFC 9113 §5.1), which decides what a late frame on it gets. */
const enum Closed {
  /** The peer sent END_STREAM (and the stream then ended): anything but PRIORITY/WINDOW_UPDATE/RST_STREAM is STREAM_CLOSED. */
  PeerEnded,
  /** The peer sent RST_STREAM: DATA or HEADERS get a stream error STREAM_CLOSED. */
  PeerReset,
  /** We reset or refused it: late frames may have been in flight, ignored. */
  ByUs,
}

/** A stream id's state as RFC 9113 §5.1 names it, for a frame that arrives on it. */
const enum Phase {
  Idle,
  /** Open or half-closed: in `streams` (remoteEnded tells half-closed (remote)). */
  Live,
  ClosedPeerEnded,
  ClosedPeerReset,
  ClosedByUs,
  /** Closed long ago (no longer remembered how): late frames are ignored. */
  ClosedForgotten,
  /** A lower id the peer skipped: closed by §5.1.1 when it opened a higher one. */
  Skipped,
}

export class H2Connection implements Flushable, StreamOwner {
  readonly streams = new Map<number, H2Stream>();
  /** Highest client stream id seen (for GOAWAY and to tell idle from closed streams). */
  lastStreamId = 0;
  /** When the last bytes arrived (ms), for keepalive. */
  lastReadAt: number;
  /** Sent a PING we have had no ACK for, at this time (ms); 0 when none. */
  pingSentAt = 0;
  readonly openedAt: number;
  private readonly decoder: HpackDecoder;
  private prefaceLeft = CLIENT_PREFACE.length;
  private settingsSeen = false;
  /** A frame split across reads: its bytes so far (`partialLen`), in a buffer of the frame's size once known. */
  private partial: Buffer | null = null;
  private partialLen = 0;
  private readonly hdr: FrameHeader = { length: 0, type: 0, flags: 0, streamId: 0 };
  // A header block spread over HEADERS + CONTINUATION frames.
  private contStream = 0;
  private contFlags = 0;
  private contSelfDep = false;
  private contParts: Buffer[] = [];
  private contBytes = 0;
  private contStartedAt = 0;
  // Closed streams, most recent last (Map keeps insertion order), and the highest id forgotten.
  private readonly closedHow = new Map<number, Closed>();
  private closedFloor = 0;
  /** When our SETTINGS went out unacknowledged (ms); 0 once acked. */
  private settingsSentAt: number;
  private answers = 0;
  // Peer's settings and windows (what we may send).
  private peerInitialWindow = DEFAULT_WINDOW;
  private peerMaxFrame = MIN_MAX_FRAME_SIZE;
  private sendWindow = DEFAULT_WINDOW;
  // Our receive side.
  private recvWindow: number;
  private recvUnacked = 0;
  // Send side.
  private ctrl: Buffer[] = [];
  private ctrlBytes = 0;
  private ready: H2Stream[] = [];
  private spare: H2Stream[] = [];
  private dirty = false;
  private closed = false;
  private goawaySent = false;
  private openedThisSecond = 0;
  private secondStart = 0;
  private readonly resets: Budget<ResetKind>;
  private readonly glitches: Budget<GlitchKind>;
  /** DATA bytes sent since the peer's last connection WINDOW_UPDATE: one that returns none is a glitch. */
  private sentSinceUpdate = 0;
  private goawaySeen = false;

  constructor(
    readonly socket: Socket,
    private readonly handler: ConnectionHandler,
    private readonly limits: ConnectionLimits,
    now: number,
  ) {
    this.lastReadAt = now;
    this.openedAt = now;
    this.decoder = new HpackDecoder();
    this.recvWindow = limits.initialWindow;
    this.resets = new Budget(limits.resetBurst, limits.resetRate, now);
    this.glitches = new Budget(limits.glitchBurst, limits.glitchRate, now);
    socket.setNoDelay(true);
    // Reads land in the buffer all connections share (read-buffer.ts); 'data' stays for where that is not
    // available, and for tests that feed a connection through it.
    const onBytes = (b: Buffer): void => this.onBytes(b);
    readIntoShared(socket, onBytes);
    socket.on('data', onBytes);
    socket.on('drain', () => {
      if (this.ready.length > 0) this.markDirty();
    });
    socket.on('error', () => undefined); // 'close' follows
    socket.on('close', () => this.onSocketClose());
    // Our settings, and the connection window raised to match the streams'. MAX_CONCURRENT_STREAMS is the cap we
    // enforce, so conforming clients queue their streams instead of having them refused.
    this.settingsSentAt = now;
    this.control(
      settingsFrame([
        [Setting.ENABLE_PUSH, 0],
        [Setting.MAX_CONCURRENT_STREAMS, limits.maxOpenStreams],
        [Setting.INITIAL_WINDOW_SIZE, limits.initialWindow],
        [Setting.MAX_FRAME_SIZE, limits.maxFrameSize],
        [Setting.MAX_HEADER_LIST_SIZE, limits.maxHeaderListBytes],
      ]),
    );
    if (limits.initialWindow > DEFAULT_WINDOW) this.control(windowUpdateFrame(0, limits.initialWindow - DEFAULT_WINDOW));
    this.recvWindow = Math.max(limits.initialWindow, DEFAULT_WINDOW);
  }

  /** The peer's preface and first SETTINGS have arrived. */
  get handshakeDone(): boolean {
    return this.settingsSeen;
  }

  /** Streams we still have something to send on (half-closed (local) ones are done: only the peer may send). */
  get responding(): number {
    let n = 0;
    for (const s of this.streams.values()) if (s.state !== StreamState.Ended) n++;
    return n;
  }

  /** Bytes written to the socket and not yet taken by the kernel. */
  get backlog(): number {
    return this.socket.writableLength;
  }

  /**
   * Memory held for this connection (bytes, estimated for object overheads): the partial frame, an unfinished
   * header block, queued control frames, the HPACK dynamic table, response bytes queued on streams and not yet
   * taken by the kernel. Each term has its bound (the header comment); a test holds the sum to them.
   */
  heldBytes(): number {
    let n = (this.partial?.length ?? 0) + this.contBytes + this.contParts.length * BUFFER_OVERHEAD;
    n += this.ctrlBytes + this.ctrl.length * BUFFER_OVERHEAD + this.decoder.dynamicTableSize + this.closedHow.size * 16;
    for (const s of this.streams.values()) n += s.queued + (s.trailers?.length ?? 0);
    return n + this.socket.writableLength;
  }

  /** Time bounds of the protocol, checked by the server's sweep: an unfinished header block, our SETTINGS' ACK. */
  checkDeadlines(now: number): void {
    if (this.contStream !== 0 && now - this.contStartedAt > this.limits.headerBlockTimeoutMs) return this.fail(H2Error.ENHANCE_YOUR_CALM, 'header block not finished in time');
    if (this.settingsSentAt !== 0 && now - this.settingsSentAt > this.limits.settingsAckTimeoutMs) return this.fail(H2Error.SETTINGS_TIMEOUT, 'SETTINGS not acknowledged');
  }

  // ---- receiving ----

  private onBytes(b: Buffer): void {
    if (this.closed) return;
    this.lastReadAt = Date.now();
    let off = 0;
    if (this.prefaceLeft > 0) {
      const n = Math.min(this.prefaceLeft, b.length);
      const at = CLIENT_PREFACE.length - this.prefaceLeft;
      if (b.compare(CLIENT_PREFACE, at, at + n, 0, n) !== 0) return this.fail(H2Error.PROTOCOL_ERROR, 'bad connection preface');
      this.prefaceLeft -= n;
      off = n;
    }
    if (this.partial !== null) {
      off = this.completePartial(b, off);
      if (this.closed) return;
    }
    const h = this.hdr;
    while (b.length - off >= FRAME_HEADER_SZ) {
      readFrameHeader(b, off, h);
      if (h.length > this.limits.maxFrameSize) return this.fail(H2Error.FRAME_SIZE_ERROR, 'frame larger than MAX_FRAME_SIZE');
      if (b.length - off - FRAME_HEADER_SZ < h.length) break;
      this.onFrame(b, off + FRAME_HEADER_SZ, h);
      if (this.closed) return;
      off += FRAME_HEADER_SZ + h.length;
    }
    if (off < b.length) {
      // The start of a frame: held in a buffer of the frame's size (its header's, until the header is whole).
      const have = b.length - off;
      const size = have >= FRAME_HEADER_SZ ? FRAME_HEADER_SZ + readFrameHeader(b, off, h).length : FRAME_HEADER_SZ;
      this.partial = Buffer.allocUnsafe(size);
      this.partialLen = b.copy(this.partial, 0, off);
    }
    if (this.recvUnacked >= this.limits.initialWindow >>> 1) {
      this.control(windowUpdateFrame(0, this.recvUnacked));
      this.recvWindow += this.recvUnacked;
      this.recvUnacked = 0;
    }
  }

  /** Adds b[off..] to the partial frame; runs it once whole. Returns where the rest of b starts. */
  private completePartial(b: Buffer, off: number): number {
    let p = this.partial!;
    const h = this.hdr;
    if (p.length === FRAME_HEADER_SZ && this.partialLen < FRAME_HEADER_SZ) {
      const n = b.copy(p, this.partialLen, off, off + FRAME_HEADER_SZ - this.partialLen);
      this.partialLen += n;
      off += n;
      if (this.partialLen < FRAME_HEADER_SZ) return off;
      readFrameHeader(p, 0, h);
      if (h.length > this.limits.maxFrameSize) {
        this.fail(H2Error.FRAME_SIZE_ERROR, 'frame larger than MAX_FRAME_SIZE');
        return b.length;
      }
      if (h.length > 0) {
        const whole = Buffer.allocUnsafe(FRAME_HEADER_SZ + h.length);
        p.copy(whole, 0, 0, FRAME_HEADER_SZ);
        this.partial = p = whole;
      }
    }
    const n = b.copy(p, this.partialLen, off, off + p.length - this.partialLen);
    this.partialLen += n;
    off += n;
    if (this.partialLen < p.length) return off;
    this.partial = null;
    this.partialLen = 0;
    readFrameHeader(p, 0, h);
    this.onFrame(p, FRAME_HEADER_SZ, h);
    return off;
  }

  /** The state of stream `id` for a frame that arrives on it (RFC 9113 §5.1). */
  private phase(id: number): Phase {
    if (this.streams.has(id)) return Phase.Live;
    if (id > this.lastStreamId) return Phase.Idle;
    const how = this.closedHow.get(id);
    if (how === Closed.PeerEnded) return Phase.ClosedPeerEnded;
    if (how === Closed.PeerReset) return Phase.ClosedPeerReset;
    if (how === Closed.ByUs) return Phase.ClosedByUs;
    // Every stream the peer opened is live, remembered, or forgotten (then its id is at most closedFloor).
    return id > this.closedFloor ? Phase.Skipped : Phase.ClosedForgotten;
  }

  private rememberClosed(id: number, how: Closed): void {
    this.closedHow.set(id, how);
    if (this.closedHow.size <= MAX_CLOSED_REMEMBERED) return;
    const oldest = this.closedHow.keys().next().value as number;
    this.closedHow.delete(oldest);
    if (oldest > this.closedFloor) this.closedFloor = oldest;
  }

  private onFrame(b: Buffer, start: number, h: FrameHeader): void {
    if (!this.settingsSeen && h.type !== FrameType.SETTINGS) return this.fail(H2Error.PROTOCOL_ERROR, 'first frame is not SETTINGS');
    if (this.contStream !== 0 && h.type !== FrameType.CONTINUATION) return this.fail(H2Error.PROTOCOL_ERROR, 'header block interrupted');
    switch (h.type) {
      case FrameType.DATA:
        return this.onData(b, start, h);
      case FrameType.HEADERS:
        return this.onHeaders(b, start, h);
      case FrameType.CONTINUATION:
        return this.onContinuation(b, start, h);
      case FrameType.RST_STREAM:
        return this.onRstStream(b, start, h);
      case FrameType.SETTINGS:
        return this.onSettings(b, start, h);
      case FrameType.PING:
        return this.onPing(b, start, h);
      case FrameType.WINDOW_UPDATE:
        return this.onWindowUpdate(b, start, h);
      case FrameType.PRIORITY:
        if (h.streamId === 0) return this.fail(H2Error.PROTOCOL_ERROR, 'PRIORITY on stream 0');
        if (h.length !== PRIORITY_SZ) return this.streamError(h.streamId, H2Error.FRAME_SIZE_ERROR);
        // RFC 7540 priorities, deprecated and not acted on here: nghttp2 counts each as a glitch too.
        if (!this.glitch('priority')) return;
        // Priorities are not acted on, but a stream depending on itself is a stream error (RFC 9113 §5.3.1).
        if ((b.readUInt32BE(start) & MAX_WINDOW) === h.streamId) return this.streamError(h.streamId, H2Error.PROTOCOL_ERROR);
        return;
      case FrameType.GOAWAY:
        if (h.streamId !== 0) return this.fail(H2Error.PROTOCOL_ERROR, 'GOAWAY on a stream');
        // The peer opens nothing new; its open streams run on until either side ends them.
        if (this.goawaySeen) this.glitch('ignored_frame');
        this.goawaySeen = true;
        return;
      case FrameType.PUSH_PROMISE:
        return this.fail(H2Error.PROTOCOL_ERROR, 'PUSH_PROMISE from a client');
      default:
        // Unknown frame types are ignored (RFC 9113 §4.1); many of them are a flood (nghttp2 counts them too).
        this.glitch('unknown_frame');
        return;
    }
  }

  private onData(b: Buffer, start: number, h: FrameHeader): void {
    const id = h.streamId;
    if (id === 0) return this.fail(H2Error.PROTOCOL_ERROR, 'DATA on stream 0');
    if (h.length > this.recvWindow) return this.fail(H2Error.FLOW_CONTROL_ERROR, 'connection window exceeded');
    this.recvWindow -= h.length;
    this.recvUnacked += h.length;
    const r = unpaddedRange(b, start, h.length, h.flags, h.type);
    if (r === null) return this.fail(H2Error.PROTOCOL_ERROR, 'bad DATA padding');
    const s = this.streams.get(id);
    if (s === undefined) {
      switch (this.phase(id)) {
        case Phase.Idle:
          return this.fail(H2Error.PROTOCOL_ERROR, 'DATA on an idle stream');
        case Phase.ClosedPeerEnded:
          return this.fail(H2Error.STREAM_CLOSED, 'DATA after END_STREAM');
        case Phase.ClosedPeerReset:
          return this.streamError(id, H2Error.STREAM_CLOSED);
        default:
          // A stream we ended or reset: the bytes only count against the connection window.
          this.glitch('ignored_frame');
          return;
      }
    }
    if (s.remoteEnded) return this.streamError(id, H2Error.STREAM_CLOSED);
    if (h.length > s.recvWindow) return this.streamError(id, H2Error.FLOW_CONTROL_ERROR);
    s.recvWindow -= h.length;
    s.unacked += h.length;
    s.received += r[1] - r[0];
    // content-length is a promise about the DATA (RFC 9113 §8.1.1): more, or less at the end, is malformed.
    const endStream = (h.flags & Flag.END_STREAM) !== 0;
    if (r[1] === r[0] && !endStream && !this.glitch('empty_data')) return;
    if (s.contentLength >= 0 && (s.received > s.contentLength || (endStream && s.received !== s.contentLength))) return this.streamError(id, H2Error.PROTOCOL_ERROR);
    if (r[1] > r[0]) s.onData?.(b, r[0], r[1]);
    if (s.state === StreamState.Closed) return;
    if (endStream) {
      this.remoteEnd(s);
    } else if (s.unacked >= this.limits.initialWindow >>> 1) {
      this.control(windowUpdateFrame(id, s.unacked));
      s.recvWindow += s.unacked;
      s.unacked = 0;
    }
  }

  private onHeaders(b: Buffer, start: number, h: FrameHeader): void {
    const id = h.streamId;
    if (id === 0 || (id & 1) === 0) return this.fail(H2Error.PROTOCOL_ERROR, 'HEADERS on a server or zero stream id');
    const r = unpaddedRange(b, start, h.length, h.flags, h.type);
    if (r === null) return this.fail(H2Error.PROTOCOL_ERROR, 'bad HEADERS padding');
    // The priority fields sit after the pad length: a stream depending on itself is a stream error (§5.3.1).
    const pri = start + ((h.flags & Flag.PADDED) !== 0 ? 1 : 0);
    const selfDep = (h.flags & Flag.PRIORITY) !== 0 && (b.readUInt32BE(pri) & MAX_WINDOW) === id;
    if ((h.flags & Flag.END_HEADERS) !== 0) return this.onHeaderBlock(id, h.flags, selfDep, b.subarray(r[0], r[1]));
    this.contStream = id;
    this.contFlags = h.flags;
    this.contSelfDep = selfDep;
    this.contParts = [Buffer.from(b.subarray(r[0], r[1]))];
    this.contBytes = r[1] - r[0];
    this.contStartedAt = Date.now();
    this.checkBlockSize();
  }

  private onContinuation(b: Buffer, start: number, h: FrameHeader): void {
    if (this.contStream === 0 || h.streamId !== this.contStream) return this.fail(H2Error.PROTOCOL_ERROR, 'unexpected CONTINUATION');
    if (this.contParts.length > MAX_CONTINUATIONS) return this.fail(H2Error.ENHANCE_YOUR_CALM, 'too many CONTINUATION frames');
    if (h.length > 0) this.contParts.push(Buffer.from(b.subarray(start, start + h.length)));
    else this.contParts.push(EMPTY); // counted (the frame bound), nothing held
    this.contBytes += h.length;
    if (!this.checkBlockSize()) return;
    if ((h.flags & Flag.END_HEADERS) === 0) return;
    const id = this.contStream;
    const block = Buffer.concat(this.contParts);
    this.contStream = 0;
    this.contParts = [];
    this.contBytes = 0;
    this.onHeaderBlock(id, this.contFlags, this.contSelfDep, block);
  }

  private checkBlockSize(): boolean {
    if (this.contBytes <= this.limits.maxHeaderListBytes * BLOCK_FACTOR) return true;
    this.fail(H2Error.ENHANCE_YOUR_CALM, 'header block too large');
    return false;
  }

  private onHeaderBlock(id: number, flags: number, selfDep: boolean, block: Buffer): void {
    // Every block is decoded, even for streams we refuse or that are closed: the decoder's table must follow the
    // peer's encoder. A list over our bound decodes too (the table stays in step) and costs only its stream.
    const decoded = this.decoder.decode(block, this.limits.maxHeaderListBytes);
    if (!Array.isArray(decoded) && decoded.listTooLarge !== true) return this.fail(H2Error.COMPRESSION_ERROR, 'header block does not decode');
    const fields = Array.isArray(decoded) ? decoded : null;
    const endStream = (flags & Flag.END_STREAM) !== 0;
    switch (this.phase(id)) {
      case Phase.Live:
        return this.onTrailers(this.streams.get(id)!, fields, endStream, selfDep);
      case Phase.Idle:
        break;
      case Phase.ClosedPeerEnded:
        return this.fail(H2Error.STREAM_CLOSED, 'HEADERS after END_STREAM');
      case Phase.ClosedPeerReset:
        return this.streamError(id, H2Error.STREAM_CLOSED);
      case Phase.Skipped:
        return this.fail(H2Error.PROTOCOL_ERROR, 'HEADERS opening a stream id lower than one already used');
      default:
        // A stream we ended or reset: what the peer still sends on it was in flight.
        this.glitch('ignored_frame');
        return;
    }
    this.lastStreamId = id;
    if (this.goawaySent) return this.refuse(id, endStream, rstStreamFrame(id, H2Error.REFUSED_STREAM));
    const now = Date.now();
    if (now - this.secondStart >= 1000) {
      this.secondStart = now;
      this.openedThisSecond = 0;
    }
    if (++this.openedThisSecond > this.limits.maxNewStreamsPerSec) return this.fail(H2Error.ENHANCE_YOUR_CALM, 'too many new streams per second');
    if (selfDep) return this.refuse(id, endStream, rstStreamFrame(id, H2Error.PROTOCOL_ERROR));
    if (fields === null) {
      // RFC 9113 §10.5.1: a header section larger than we take gets 431, the connection goes on.
      this.refuse(id, endStream, this.headerBlock([[':status', '431']], id, true));
      if (!endStream) this.answer(rstStreamFrame(id, H2Error.NO_ERROR));
      return;
    }
    const head = checkRequestHeaders(fields);
    // A malformed request is a stream error PROTOCOL_ERROR (RFC 9113 §8.1.1), as nghttp2 answers it.
    if ('malformed' in head) return this.refuse(id, endStream, rstStreamFrame(id, H2Error.PROTOCOL_ERROR));
    if (endStream && head.contentLength !== null && head.contentLength !== 0) return this.refuse(id, true, rstStreamFrame(id, H2Error.PROTOCOL_ERROR));
    if (this.streams.size >= this.limits.maxOpenStreams) return this.refuse(id, endStream, rstStreamFrame(id, H2Error.REFUSED_STREAM));
    const s = new H2Stream(id, this.peerInitialWindow, this, this.limits.streamHighWater);
    s.recvWindow = this.limits.initialWindow;
    s.contentLength = head.contentLength ?? -1;
    this.streams.set(id, s);
    s.remoteEnded = endStream;
    this.handler.onStream(s, fields, this);
    if (endStream && s.state !== StreamState.Closed) s.onRemoteEnd?.();
  }

  /** A second header block on a live stream: trailers, which end the request side. */
  private onTrailers(s: H2Stream, fields: HeaderField[] | null, endStream: boolean, selfDep: boolean): void {
    if (s.remoteEnded) return this.streamError(s.id, H2Error.STREAM_CLOSED);
    // Trailers end the stream and carry no pseudo-header (RFC 9113 §8.1); the DATA must match content-length.
    if (selfDep || fields === null || !endStream || checkTrailers(fields) !== null) return this.streamError(s.id, H2Error.PROTOCOL_ERROR);
    if (s.contentLength >= 0 && s.received !== s.contentLength) return this.streamError(s.id, H2Error.PROTOCOL_ERROR);
    this.remoteEnd(s);
  }

  /** The peer's END_STREAM on a live stream: half-closed (remote), or closed when our END_STREAM is already out. */
  private remoteEnd(s: H2Stream): void {
    s.remoteEnded = true;
    if (s.state !== StreamState.Ended) return s.onRemoteEnd?.();
    this.forget(s, false);
    this.rememberClosed(s.id, Closed.PeerEnded);
  }

  /** A new stream answered without being opened (refused, reset or a fixed response): remembered as closed. */
  private refuse(id: number, peerEnded: boolean, frame: Buffer): void {
    this.rememberClosed(id, peerEnded ? Closed.PeerEnded : Closed.ByUs);
    if (!this.spendReset('refused')) return;
    this.answer(frame);
  }

  private onRstStream(b: Buffer, start: number, h: FrameHeader): void {
    if (h.streamId === 0) return this.fail(H2Error.PROTOCOL_ERROR, 'RST_STREAM on stream 0');
    if (h.length !== RST_STREAM_SZ) return this.fail(H2Error.FRAME_SIZE_ERROR, 'RST_STREAM size');
    if (h.streamId > this.lastStreamId) return this.fail(H2Error.PROTOCOL_ERROR, 'RST_STREAM on an idle stream');
    const s = this.streams.get(h.streamId);
    if (s !== undefined) {
      this.forget(s, true);
      this.rememberClosed(s.id, Closed.PeerReset);
    }
    // Every RST_STREAM, as nghttp2 counts them: on a closed stream it is a reset that costs us a lookup for nothing.
    this.spendReset('client_reset');
  }

  private onSettings(b: Buffer, start: number, h: FrameHeader): void {
    if (h.streamId !== 0) return this.fail(H2Error.PROTOCOL_ERROR, 'SETTINGS on a stream');
    if ((h.flags & Flag.ACK) !== 0) {
      if (h.length !== 0) return this.fail(H2Error.FRAME_SIZE_ERROR, 'SETTINGS ack with payload');
      if (this.settingsSentAt === 0 && !this.glitch('settings')) return; // an ACK of nothing we sent
      this.settingsSentAt = 0; // we send one SETTINGS, so one ACK is all there is to wait for
      return;
    }
    if (h.length % SETTING_SZ !== 0) return this.fail(H2Error.FRAME_SIZE_ERROR, 'SETTINGS size');
    // The first SETTINGS is the handshake; a client changes its settings rarely after it.
    if (this.settingsSeen && !this.glitch('settings')) return;
    this.settingsSeen = true;
    for (let at = start; at < start + h.length; at += SETTING_SZ) {
      const id = b.readUInt16BE(at);
      const v = b.readUInt32BE(at + 2);
      if (id === Setting.ENABLE_PUSH && v > 1) return this.fail(H2Error.PROTOCOL_ERROR, 'ENABLE_PUSH');
      if (id === Setting.INITIAL_WINDOW_SIZE) {
        if (v > MAX_WINDOW) return this.fail(H2Error.FLOW_CONTROL_ERROR, 'INITIAL_WINDOW_SIZE');
        const delta = v - this.peerInitialWindow;
        this.peerInitialWindow = v;
        for (const s of this.streams.values()) {
          s.window += delta;
          if (s.window > MAX_WINDOW) return this.fail(H2Error.FLOW_CONTROL_ERROR, 'stream window overflow');
          if (delta > 0 && s.window > 0 && (s.queued > 0 || s.trailers !== null) && !s.scheduled) this.schedule(s);
        }
      }
      if (id === Setting.MAX_FRAME_SIZE) {
        if (v < MIN_MAX_FRAME_SIZE || v > MAX_MAX_FRAME_SIZE) return this.fail(H2Error.PROTOCOL_ERROR, 'MAX_FRAME_SIZE');
        this.peerMaxFrame = Math.min(v, MAX_SEND_FRAME);
      }
      // HEADER_TABLE_SIZE: every block we send shrinks our (unused) table to 0 anyway. Others need nothing.
    }
    this.answer(SETTINGS_ACK);
  }

  private onPing(b: Buffer, start: number, h: FrameHeader): void {
    if (h.streamId !== 0) return this.fail(H2Error.PROTOCOL_ERROR, 'PING on a stream');
    if (h.length !== PING_PAYLOAD_SZ) return this.fail(H2Error.FRAME_SIZE_ERROR, 'PING size');
    if ((h.flags & Flag.ACK) !== 0) {
      if (this.pingSentAt === 0) this.glitch('ping'); // an ACK of no PING of ours
      this.pingSentAt = 0;
      return;
    }
    // Keepalive and bandwidth probes are a few a second at most.
    if (!this.glitch('ping')) return;
    this.answer(pingFrame(b.subarray(start, start + PING_PAYLOAD_SZ), true));
  }

  private onWindowUpdate(b: Buffer, start: number, h: FrameHeader): void {
    if (h.length !== WINDOW_UPDATE_SZ) return this.fail(H2Error.FRAME_SIZE_ERROR, 'WINDOW_UPDATE size');
    const inc = b.readUInt32BE(start) & MAX_WINDOW;
    if (h.streamId === 0) {
      if (inc === 0) return this.fail(H2Error.PROTOCOL_ERROR, 'zero WINDOW_UPDATE');
      // Window returned for DATA we sent is progress; more window before any was used is not (beyond the few a
      // client sends to raise its window at the start).
      if (this.sentSinceUpdate === 0 && !this.glitch('window_update')) return;
      this.sentSinceUpdate = 0;
      this.sendWindow += inc;
      if (this.sendWindow > MAX_WINDOW) return this.fail(H2Error.FLOW_CONTROL_ERROR, 'connection window overflow');
      if (this.ready.length > 0) this.markDirty();
      return;
    }
    const s = this.streams.get(h.streamId);
    if (s === undefined) {
      if (h.streamId > this.lastStreamId) return this.fail(H2Error.PROTOCOL_ERROR, 'WINDOW_UPDATE on an idle stream');
      this.glitch('window_update'); // a closed stream: may have been in flight, does nothing
      return;
    }
    if (inc === 0) return this.streamError(h.streamId, H2Error.PROTOCOL_ERROR);
    if (s.sentSinceUpdate === 0 && !this.glitch('window_update')) return;
    s.sentSinceUpdate = 0;
    s.window += inc;
    if (s.window > MAX_WINDOW) return this.streamError(h.streamId, H2Error.FLOW_CONTROL_ERROR);
    if (s.window > 0 && (s.queued > 0 || s.trailers !== null) && !s.scheduled) this.schedule(s);
  }

  /** A stream-level error: RST_STREAM to the peer, the stream is gone for the application. */
  private streamError(id: number, code: number): void {
    if (!this.spendReset('stream_error')) return;
    const s = this.streams.get(id);
    this.answer(rstStreamFrame(id, code));
    if (s !== undefined) {
      this.forget(s, true);
      this.rememberClosed(id, Closed.ByUs);
    }
  }

  /** A control frame the peer's frames asked for; more than MAX_ANSWERS_PER_TURN in a turn ends the connection. */
  private answer(frame: Buffer): void {
    if (++this.answers > MAX_ANSWERS_PER_TURN) return this.fail(H2Error.ENHANCE_YOUR_CALM, 'too many frames to answer at once');
    this.control(frame);
  }

  /** A stream ended without its response: one token of the reset budget. false: spent, the connection is ended. */
  private spendReset(kind: ResetKind): boolean {
    if (this.resets.spend(kind, this.lastReadAt)) return true;
    this.fail(H2Error.ENHANCE_YOUR_CALM, 'too many streams reset or refused', this.resets.topKind());
    return false;
  }

  /** A frame that did nothing: one token of the glitch budget. false: spent, the connection is ended. */
  private glitch(kind: GlitchKind): boolean {
    if (this.glitches.spend(kind, this.lastReadAt)) return true;
    this.fail(H2Error.ENHANCE_YOUR_CALM, 'too many frames that do nothing', this.glitches.topKind());
    return false;
  }

  // ---- StreamOwner ----

  schedule(s: H2Stream): void {
    s.scheduled = true;
    this.ready.push(s);
    this.markDirty();
  }

  control(frame: Buffer): void {
    if (this.closed) return;
    this.ctrl.push(frame);
    this.ctrlBytes += frame.length;
    this.markDirty();
  }

  headerBlock(fields: ReadonlyArray<readonly [string, string]>, streamId: number, endStream: boolean): Buffer {
    const block = Buffer.concat([TABLE_SIZE_ZERO, encodeHeaderBlock(fields)]);
    return headerFrames(streamId, block, endStream, this.peerMaxFrame);
  }

  resetStream(s: H2Stream, code: number): void {
    this.control(rstStreamFrame(s.id, code));
    this.forget(s, false);
    this.rememberClosed(s.id, s.remoteEnded ? Closed.PeerEnded : Closed.ByUs);
  }

  // ---- connection control ----

  /** Sends a PING whose ACK proves the peer alive (keepalive). */
  ping(now: number): void {
    this.pingSentAt = now;
    const p = Buffer.alloc(PING_PAYLOAD_SZ);
    p.writeDoubleBE(now, 0);
    this.control(pingFrame(p, false));
  }

  /** No new streams; open ones go on (graceful shutdown). */
  goaway(code: number = H2Error.NO_ERROR, debug = ''): void {
    if (this.goawaySent || this.closed) return;
    this.goawaySent = true;
    this.control(goawayFrame(this.lastStreamId, code, debug));
  }

  /** Connection error: GOAWAY with the code after the control frames queued (no more DATA), then the socket ends. */
  fail(code: number, debug: string, flood?: Flood): void {
    if (this.closed) return;
    this.handler.onError?.(this, code, debug, flood);
    for (const s of this.ready) s.scheduled = false;
    this.ready = [];
    this.goawaySent = false;
    this.goaway(code, debug);
    this.flush();
    this.destroy(true);
  }

  /**
   * Ends the connection on the application's account (not a protocol error, so not counted as one): what is
   * queued now leaves first (a status just given included, when its stream's window lets it through), then
   * GOAWAY with the code, then the socket ends. Every other stream of the connection is gone with it.
   */
  goAwayAndClose(code: number = H2Error.NO_ERROR, debug = ''): void {
    if (this.closed) return;
    this.flush();
    this.goawaySent = false; // a shutdown GOAWAY already sent: this one still says why the connection ends
    this.goaway(code, debug);
    this.flush();
    this.destroy(true);
  }

  /** Ends the connection: streams are told they are gone; `gracefully` lets written bytes reach the peer first. */
  destroy(gracefully = false): void {
    if (this.closed) return;
    this.closeStreams();
    if (gracefully) {
      this.socket.end();
      setTimeout(() => this.socket.destroy(), 1000).unref();
    } else {
      this.socket.destroy();
    }
  }

  private onSocketClose(): void {
    this.closeStreams();
  }

  private closeStreams(): void {
    if (this.closed) return;
    this.closed = true;
    this.partial = null;
    this.contParts = [];
    this.contBytes = 0;
    this.ctrl = [];
    this.ctrlBytes = 0;
    this.ready = [];
    const all = [...this.streams.values()];
    this.streams.clear();
    for (const s of all) {
      const gone = s.onGone;
      s.discard();
      gone?.();
    }
    this.handler.onClose(this);
  }

  /** The stream is over: dropped from the map, its queue released; `gone` tells the application. */
  private forget(s: H2Stream, gone: boolean): void {
    if (this.streams.get(s.id) === s) this.streams.delete(s.id);
    const cb = s.onGone;
    s.discard();
    if (gone) cb?.();
  }

  private markDirty(): void {
    if (this.dirty || this.closed) return;
    this.dirty = true;
    scheduleFlush(this);
  }

  // ---- sending ----

  flush(): void {
    this.dirty = false;
    this.answers = 0;
    if (this.closed) return;
    const backlog = this.socket.writableLength;
    if (backlog > this.limits.maxControlBytes) {
      // The peer reads nothing of what it keeps asking for.
      this.ctrl = [];
      this.ctrlBytes = 0;
      this.handler.onError?.(this, H2Error.ENHANCE_YOUR_CALM, 'peer does not read its control frames');
      return this.destroy(false);
    }
    const maxF = this.peerMaxFrame;
    let room = Math.max(0, Math.min(this.sendWindow, this.limits.maxOutboundBytes - backlog));
    let size = this.ctrlBytes;
    const ready = this.ready;
    // Plan: how much each stream sends now (its window, the connection's window, the backlog bound). When the
    // room does not cover every stream's wish, streams take it in turn from a start that moves on by one on every
    // such flush, each taking all it may: no stream waits more than (streams − 1) short flushes to go first, so
    // none starves at the back. Not nghttp2's one-frame-per-stream rounds: measured with the bench's client
    // (it returns window as messages complete), rounds of whole frames cut delivery to a third and equal slivers
    // to a fifteenth, since every stream is left holding a partial message; taking turns leaves one.
    const plan = this.planned;
    plan.length = 0;
    let want = 0;
    for (let i = 0; i < ready.length; i++) {
      const s = ready[i]!;
      const n = s.state !== StreamState.Closed && s.window > 0 ? Math.min(s.queued, s.window) : 0;
      plan.push(n);
      want += n;
    }
    if (want > room) {
      const len = ready.length;
      const start = this.rrStart++ % len;
      for (let k = 0; k < len; k++) {
        const i = (start + k) % len;
        const n = Math.min(plan[i]!, room);
        plan[i] = n;
        room -= n;
      }
    }
    for (let i = 0; i < ready.length; i++) {
      const s = ready[i]!;
      const n = plan[i]!;
      if (n > 0) size += n + FRAME_HEADER_SZ * Math.ceil(n / maxF);
      if (n === s.queued && s.trailers !== null && s.state !== StreamState.Closed) size += s.trailers.length;
    }
    if (size === 0) return this.requeue();
    const out = Buffer.allocUnsafe(size);
    let off = 0;
    for (const c of this.ctrl) off += c.copy(out, off);
    this.ctrl = [];
    this.ctrlBytes = 0;
    const drained = this.drained;
    drained.length = 0;
    let unanswered = 0;
    for (let i = 0; i < ready.length; i++) {
      const s = ready[i]!;
      const n = plan[i]!;
      if (n > 0) {
        off = this.copyData(s, n, out, off, maxF);
        this.sendWindow -= n;
        this.sentSinceUpdate += n;
        s.window -= n;
        s.sentSinceUpdate += n;
        s.dataSent = true;
        if (s.needDrain) drained.push(s);
      }
      if (s.queued === 0 && s.trailers !== null && s.state !== StreamState.Closed) {
        off += s.trailers.copy(out, off);
        s.trailers = null;
        if (!s.dataSent) unanswered++;
        if (s.remoteEnded) {
          this.forget(s, false);
          this.rememberClosed(s.id, Closed.PeerEnded);
        } else {
          s.localEnded(); // half-closed (local): kept until the peer ends or resets it
        }
      }
    }
    this.requeue();
    this.socket.write(off === size ? out : out.subarray(0, off));
    for (const s of drained) s.maybeDrain();
    // Streams ended with a status and no message (refused by the application: a wrong path, a bad request, no
    // access) cost a stream's work as a reset one does. Spent after the write: failing inside it would flush again.
    while (unanswered-- > 0) if (!this.spendReset('no_response')) return;
  }

  private readonly planned: number[] = [];
  private rrStart = 0;
  private readonly drained: H2Stream[] = [];

  /** Streams that still have something they could send once the connection window or the socket allows it. */
  private requeue(): void {
    const next = this.spare;
    next.length = 0;
    for (const s of this.ready) {
      if (s.state === StreamState.Closed || (s.queued === 0 && s.trailers === null)) s.scheduled = false;
      else if (s.window <= 0 && s.queued > 0) s.scheduled = false; // its WINDOW_UPDATE reschedules it
      else next.push(s);
    }
    this.spare = this.ready;
    this.ready = next;
  }

  /** n bytes of s's queue as DATA frames of at most maxF bytes at out[off]. */
  private copyData(s: H2Stream, n: number, out: Buffer, off: number, maxF: number): number {
    let left = n;
    while (left > 0) {
      const fl = Math.min(left, maxF);
      off = writeFrameHeader(out, off, fl, FrameType.DATA, 0, s.id);
      let need = fl;
      while (need > 0) {
        const b = s.q[s.head]!;
        const take = Math.min(b.length - s.headOff, need);
        off += b.copy(out, off, s.headOff, s.headOff + take);
        need -= take;
        s.headOff += take;
        if (s.headOff === b.length) {
          s.q[s.head] = EMPTY;
          s.head++;
          s.headOff = 0;
        }
      }
      left -= fl;
    }
    s.queued -= n;
    if (s.head === s.q.length) {
      s.q.length = 0;
      s.head = 0;
    } else if (s.head >= 1024) {
      s.q = s.q.slice(s.head);
      s.head = 0;
    }
    return off;
  }
}

const EMPTY = Buffer.alloc(0);

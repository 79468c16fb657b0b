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
import { scheduleFlush, type Flushable } from './flush';
import { H2Stream, StreamState, type StreamOwner } from './stream';

// One HTTP/2 connection of the fanout's own server (RFC 9113), as much of the protocol as a gRPC server of
// long-lived streams needs and no more: no push, no priorities, no dynamic table on the sending side.
//
// Receiving: the socket's bytes are cut into frames in place; a frame longer than our MAX_FRAME_SIZE ends the
// connection before it is buffered, so at most one frame plus one read is ever held. Request DATA is handed to
// the stream at once and its window given back as soon as half of it is used.
// Sending: streams queue references to response buffers; once per turn (flush.ts) everything sendable — control
// frames first, then each scheduled stream's data within its window, the connection window and the socket's
// backlog bound, then trailers of streams whose data is all out — is copied into one buffer and written once.
//
// Bounds: a peer that does not read stops getting data at maxOutboundBytes of unsent socket bytes (its streams
// push back to their subscriber queues); one that keeps asking for control answers (PING, SETTINGS) without
// reading them is disconnected at maxControlBytes. Streams per connection and new streams per second are capped.

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
}

export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = {
  maxFrameSize: MIN_MAX_FRAME_SIZE,
  initialWindow: 1 << 20,
  maxHeaderListBytes: 16 << 10,
  maxOpenStreams: 1024,
  maxNewStreamsPerSec: 2000,
  streamHighWater: 16 << 10,
  maxOutboundBytes: 256 << 10,
  maxControlBytes: 1 << 20,
};

export interface ConnectionHandler {
  /** A new request stream and its header list (pseudo-headers first, as sent). */
  onStream(stream: H2Stream, headers: HeaderField[], conn: H2Connection): void;
  /** The connection is gone (every stream's onGone has been called). */
  onClose(conn: H2Connection): void;
  /** We ended the connection with a connection error (the GOAWAY code and its debug text), or for not reading. */
  onError?(code: number, debug: string): void;
}

/** Frames we send: the biggest payload in one DATA frame even if the peer allows more (fewer, larger copies gain little). */
const MAX_SEND_FRAME = 64 << 10;
/** A header block (HEADERS + CONTINUATION) may be this much larger than the decoded list bound (Huffman never expands by 2×). */
const BLOCK_FACTOR = 2;
/** Every header block we send starts with a dynamic table size update to 0: our encoder never indexes. */
const TABLE_SIZE_ZERO = Buffer.from([0x20]);

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
  private pending: Buffer | null = null;
  private readonly hdr: FrameHeader = { length: 0, type: 0, flags: 0, streamId: 0 };
  // A header block spread over HEADERS + CONTINUATION frames.
  private contStream = 0;
  private contFlags = 0;
  private contParts: Buffer[] = [];
  private contBytes = 0;
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
    socket.setNoDelay(true);
    socket.on('data', (b: Buffer) => this.onBytes(b));
    socket.on('drain', () => {
      if (this.ready.length > 0) this.markDirty();
    });
    socket.on('error', () => undefined); // 'close' follows
    socket.on('close', () => this.onSocketClose());
    // Our settings, and the connection window raised to match the streams'.
    this.control(
      settingsFrame([
        [Setting.ENABLE_PUSH, 0],
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

  /** Bytes written to the socket and not yet taken by the kernel. */
  get backlog(): number {
    return this.socket.writableLength;
  }

  // ---- receiving ----

  private onBytes(chunk: Buffer): void {
    if (this.closed) return;
    let b = chunk;
    if (this.pending !== null) {
      b = Buffer.concat([this.pending, chunk]);
      this.pending = null;
    }
    let off = 0;
    if (this.prefaceLeft > 0) {
      const n = Math.min(this.prefaceLeft, b.length);
      const at = CLIENT_PREFACE.length - this.prefaceLeft;
      if (b.compare(CLIENT_PREFACE, at, at + n, 0, n) !== 0) return this.fail(H2Error.PROTOCOL_ERROR, 'bad connection preface');
      this.prefaceLeft -= n;
      off = n;
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
    if (off < b.length) this.pending = b.subarray(off);
    this.lastReadAt = Date.now();
    if (this.recvUnacked >= this.limits.initialWindow >>> 1) {
      this.control(windowUpdateFrame(0, this.recvUnacked));
      this.recvWindow += this.recvUnacked;
      this.recvUnacked = 0;
    }
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
        return;
      case FrameType.GOAWAY:
        if (h.streamId !== 0) return this.fail(H2Error.PROTOCOL_ERROR, 'GOAWAY on a stream');
        // The peer opens nothing new; its open streams run on until either side ends them.
        return;
      case FrameType.PUSH_PROMISE:
        return this.fail(H2Error.PROTOCOL_ERROR, 'PUSH_PROMISE from a client');
      default:
        return; // unknown frame types are ignored (RFC 9113 §4.1)
    }
  }

  private onData(b: Buffer, start: number, h: FrameHeader): void {
    const id = h.streamId;
    if (id === 0) return this.fail(H2Error.PROTOCOL_ERROR, 'DATA on stream 0');
    if (h.length > this.recvWindow) return this.fail(H2Error.FLOW_CONTROL_ERROR, 'connection window exceeded');
    this.recvWindow -= h.length;
    this.recvUnacked += h.length;
    const s = this.streams.get(id);
    if (s === undefined) {
      if (id > this.lastStreamId) return this.fail(H2Error.PROTOCOL_ERROR, 'DATA on an idle stream');
      return; // a stream we have finished or reset: the bytes only count against the connection window
    }
    if (s.remoteEnded) return this.streamError(id, H2Error.STREAM_CLOSED);
    const r = unpaddedRange(b, start, h.length, h.flags, h.type);
    if (r === null) return this.fail(H2Error.PROTOCOL_ERROR, 'bad DATA padding');
    if (h.length > s.recvWindow) return this.streamError(id, H2Error.FLOW_CONTROL_ERROR);
    s.recvWindow -= h.length;
    s.unacked += h.length;
    if (r[1] > r[0]) s.onData?.(b, r[0], r[1]);
    if (s.state === StreamState.Closed) return;
    if ((h.flags & Flag.END_STREAM) !== 0) {
      s.remoteEnded = true;
      s.onRemoteEnd?.();
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
    if ((h.flags & Flag.END_HEADERS) !== 0) return this.onHeaderBlock(id, h.flags, b.subarray(r[0], r[1]));
    this.contStream = id;
    this.contFlags = h.flags;
    this.contParts = [Buffer.from(b.subarray(r[0], r[1]))];
    this.contBytes = r[1] - r[0];
    this.checkBlockSize();
  }

  private onContinuation(b: Buffer, start: number, h: FrameHeader): void {
    if (this.contStream === 0 || h.streamId !== this.contStream) return this.fail(H2Error.PROTOCOL_ERROR, 'unexpected CONTINUATION');
    this.contParts.push(Buffer.from(b.subarray(start, start + h.length)));
    this.contBytes += h.length;
    if (!this.checkBlockSize()) return;
    if ((h.flags & Flag.END_HEADERS) === 0) return;
    const id = this.contStream;
    const block = Buffer.concat(this.contParts);
    this.contStream = 0;
    this.contParts = [];
    this.contBytes = 0;
    this.onHeaderBlock(id, this.contFlags, block);
  }

  private checkBlockSize(): boolean {
    if (this.contBytes <= this.limits.maxHeaderListBytes * BLOCK_FACTOR) return true;
    this.fail(H2Error.ENHANCE_YOUR_CALM, 'header block too large');
    return false;
  }

  private onHeaderBlock(id: number, flags: number, block: Buffer): void {
    // Every block is decoded, even for streams we refuse: the decoder's table must follow the peer's encoder.
    const fields = this.decoder.decode(block, this.limits.maxHeaderListBytes);
    if (!Array.isArray(fields)) return this.fail(H2Error.COMPRESSION_ERROR, 'header block does not decode');
    const endStream = (flags & Flag.END_STREAM) !== 0;
    const existing = this.streams.get(id);
    if (existing !== undefined) {
      // Trailers from the client: gRPC clients send none, but the stream's request side is over.
      if (!endStream) return this.streamError(id, H2Error.PROTOCOL_ERROR);
      existing.remoteEnded = true;
      existing.onRemoteEnd?.();
      return;
    }
    if (id <= this.lastStreamId) return; // a stream we have finished: ignore what the peer still sends on it
    this.lastStreamId = id;
    if (this.goawaySent) return this.control(rstStreamFrame(id, H2Error.REFUSED_STREAM));
    const now = Date.now();
    if (now - this.secondStart >= 1000) {
      this.secondStart = now;
      this.openedThisSecond = 0;
    }
    if (++this.openedThisSecond > this.limits.maxNewStreamsPerSec) return this.fail(H2Error.ENHANCE_YOUR_CALM, 'too many new streams per second');
    if (this.streams.size >= this.limits.maxOpenStreams) return this.control(rstStreamFrame(id, H2Error.REFUSED_STREAM));
    const s = new H2Stream(id, this.peerInitialWindow, this, this.limits.streamHighWater);
    s.recvWindow = this.limits.initialWindow;
    this.streams.set(id, s);
    s.remoteEnded = endStream;
    this.handler.onStream(s, fields, this);
    if (endStream && s.state !== StreamState.Closed) s.onRemoteEnd?.();
  }

  private onRstStream(b: Buffer, start: number, h: FrameHeader): void {
    if (h.streamId === 0) return this.fail(H2Error.PROTOCOL_ERROR, 'RST_STREAM on stream 0');
    if (h.length !== RST_STREAM_SZ) return this.fail(H2Error.FRAME_SIZE_ERROR, 'RST_STREAM size');
    if (h.streamId > this.lastStreamId) return this.fail(H2Error.PROTOCOL_ERROR, 'RST_STREAM on an idle stream');
    const s = this.streams.get(h.streamId);
    if (s !== undefined) this.forget(s, true);
  }

  private onSettings(b: Buffer, start: number, h: FrameHeader): void {
    if (h.streamId !== 0) return this.fail(H2Error.PROTOCOL_ERROR, 'SETTINGS on a stream');
    if ((h.flags & Flag.ACK) !== 0) {
      if (h.length !== 0) return this.fail(H2Error.FRAME_SIZE_ERROR, 'SETTINGS ack with payload');
      return;
    }
    if (h.length % SETTING_SZ !== 0) return this.fail(H2Error.FRAME_SIZE_ERROR, 'SETTINGS size');
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
    this.control(SETTINGS_ACK);
  }

  private onPing(b: Buffer, start: number, h: FrameHeader): void {
    if (h.streamId !== 0) return this.fail(H2Error.PROTOCOL_ERROR, 'PING on a stream');
    if (h.length !== PING_PAYLOAD_SZ) return this.fail(H2Error.FRAME_SIZE_ERROR, 'PING size');
    if ((h.flags & Flag.ACK) !== 0) {
      this.pingSentAt = 0;
      return;
    }
    this.control(pingFrame(b.subarray(start, start + PING_PAYLOAD_SZ), true));
  }

  private onWindowUpdate(b: Buffer, start: number, h: FrameHeader): void {
    if (h.length !== WINDOW_UPDATE_SZ) return this.fail(H2Error.FRAME_SIZE_ERROR, 'WINDOW_UPDATE size');
    const inc = b.readUInt32BE(start) & MAX_WINDOW;
    if (h.streamId === 0) {
      if (inc === 0) return this.fail(H2Error.PROTOCOL_ERROR, 'zero WINDOW_UPDATE');
      this.sendWindow += inc;
      if (this.sendWindow > MAX_WINDOW) return this.fail(H2Error.FLOW_CONTROL_ERROR, 'connection window overflow');
      if (this.ready.length > 0) this.markDirty();
      return;
    }
    const s = this.streams.get(h.streamId);
    if (s === undefined) {
      if (h.streamId > this.lastStreamId) return this.fail(H2Error.PROTOCOL_ERROR, 'WINDOW_UPDATE on an idle stream');
      return;
    }
    if (inc === 0) return this.streamError(h.streamId, H2Error.PROTOCOL_ERROR);
    s.window += inc;
    if (s.window > MAX_WINDOW) return this.streamError(h.streamId, H2Error.FLOW_CONTROL_ERROR);
    if (s.window > 0 && (s.queued > 0 || s.trailers !== null) && !s.scheduled) this.schedule(s);
  }

  /** A stream-level error: RST_STREAM to the peer, the stream is gone for the application. */
  private streamError(id: number, code: number): void {
    const s = this.streams.get(id);
    this.control(rstStreamFrame(id, code));
    if (s !== undefined) this.forget(s, true);
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

  /** Connection error: GOAWAY with the code, what is queued goes out, then the socket ends. */
  fail(code: number, debug: string): void {
    if (this.closed) return;
    this.handler.onError?.(code, debug);
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
    this.pending = null;
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
    if (this.closed) return;
    const backlog = this.socket.writableLength;
    if (backlog > this.limits.maxControlBytes) {
      // The peer reads nothing of what it keeps asking for.
      this.ctrl = [];
      this.ctrlBytes = 0;
      this.handler.onError?.(H2Error.ENHANCE_YOUR_CALM, 'peer does not read its control frames');
      return this.destroy(false);
    }
    const maxF = this.peerMaxFrame;
    let room = Math.max(0, Math.min(this.sendWindow, this.limits.maxOutboundBytes - backlog));
    let size = this.ctrlBytes;
    const ready = this.ready;
    // Plan: how much each stream sends now (its window, the connection's window, the backlog bound).
    const plan = this.planned;
    plan.length = 0;
    for (let i = 0; i < ready.length; i++) {
      const s = ready[i]!;
      let n = 0;
      if (s.state !== StreamState.Closed && s.window > 0 && room > 0) n = Math.min(s.queued, s.window, room);
      room -= n;
      plan.push(n);
      if (n > 0) size += n + FRAME_HEADER_SZ * Math.ceil(n / maxF);
      if (n === s.queued && s.trailers !== null) size += s.trailers.length;
    }
    if (size === 0) return this.requeue();
    const out = Buffer.allocUnsafe(size);
    let off = 0;
    for (const c of this.ctrl) off += c.copy(out, off);
    this.ctrl = [];
    this.ctrlBytes = 0;
    const drained = this.drained;
    drained.length = 0;
    for (let i = 0; i < ready.length; i++) {
      const s = ready[i]!;
      const n = plan[i]!;
      if (n > 0) {
        off = this.copyData(s, n, out, off, maxF);
        this.sendWindow -= n;
        s.window -= n;
        if (s.needDrain) drained.push(s);
      }
      if (s.queued === 0 && s.trailers !== null && s.state !== StreamState.Closed) {
        off += s.trailers.copy(out, off);
        s.trailers = null;
        this.forget(s, false);
      }
    }
    this.requeue();
    this.socket.write(off === size ? out : out.subarray(0, off));
    for (const s of drained) s.maybeDrain();
  }

  private readonly planned: number[] = [];
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

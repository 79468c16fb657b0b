import net from 'node:net';

// The server end of an HTTP/2 connection written by hand, for codec tests against node:http2 (nghttp2):
// it answers the preface with SETTINGS, acks the client's SETTINGS, joins HEADERS + CONTINUATION payloads
// into header blocks and hands each complete block to a callback. Nothing else of HTTP/2 is implemented.

// Frame header (RFC 9113 section 4.1):  length u24 | type u8 | flags u8 | R + stream id u31
const FRAME_HEADER_SZ = 9;
const LENGTH_OFF = 0;
const TYPE_OFF = 3;
const FLAGS_OFF = 4;
const STREAM_OFF = 5;
const STREAM_MASK = 0x7fffffff;

export const FRAME = { HEADERS: 0x1, SETTINGS: 0x4, CONTINUATION: 0x9 } as const;
export const FLAG = { END_STREAM: 0x1, ACK: 0x1, END_HEADERS: 0x4, PADDED: 0x8, PRIORITY: 0x20 } as const;
export const SETTING = { HEADER_TABLE_SIZE: 0x1 } as const;
const PRIORITY_SZ = 5;
const SETTING_SZ = 6;
/**
 * The client connection preface (RFC 9113 §3.4), written out here rather than taken from fanout/h2/frame.ts so
 * that the tests do not share the server's constant. The one copy for every raw HTTP/2 test helper and test.
 */
export const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

export function frame(type: number, flags: number, streamId: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(FRAME_HEADER_SZ);
  head.writeUIntBE(payload.length, LENGTH_OFF, 3);
  head[TYPE_OFF] = type;
  head[FLAGS_OFF] = flags;
  head.writeUInt32BE(streamId & STREAM_MASK, STREAM_OFF);
  return Buffer.concat([head, payload]);
}

export function settingsFrame(pairs: ReadonlyArray<readonly [id: number, value: number]>): Buffer {
  const payload = Buffer.alloc(pairs.length * SETTING_SZ);
  pairs.forEach(([id, value], i) => {
    payload.writeUInt16BE(id, i * SETTING_SZ);
    payload.writeUInt32BE(value, i * SETTING_SZ + 2);
  });
  return frame(FRAME.SETTINGS, 0, 0, payload);
}

export interface HeaderBlock {
  streamId: number;
  block: Buffer;
  /** HEADERS plus CONTINUATION frames the block came in. */
  frames: number;
  endStream: boolean;
}

export class RawPeer {
  private acksWanted: Array<() => void> = [];

  constructor(
    readonly socket: net.Socket,
    private readonly onBlock: (peer: RawPeer, b: HeaderBlock) => void,
  ) {
    let buf = Buffer.alloc(0);
    let prefaceSeen = false;
    let open: HeaderBlock | null = null;
    const parts: Buffer[] = [];
    this.acksWanted.push(() => undefined); // for our initial, empty SETTINGS
    socket.write(settingsFrame([]));
    socket.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      if (!prefaceSeen) {
        if (buf.length < PREFACE.length) return;
        if (!buf.subarray(0, PREFACE.length).equals(PREFACE)) throw new Error('raw peer: bad preface');
        buf = buf.subarray(PREFACE.length);
        prefaceSeen = true;
      }
      while (buf.length >= FRAME_HEADER_SZ) {
        const len = buf.readUIntBE(LENGTH_OFF, 3);
        if (buf.length < FRAME_HEADER_SZ + len) break;
        const type = buf[TYPE_OFF];
        const flags = buf[FLAGS_OFF];
        const streamId = buf.readUInt32BE(STREAM_OFF) & STREAM_MASK;
        let payload = buf.subarray(FRAME_HEADER_SZ, FRAME_HEADER_SZ + len);
        buf = buf.subarray(FRAME_HEADER_SZ + len);
        if (type === FRAME.SETTINGS) {
          if (flags & FLAG.ACK) this.acksWanted.shift()?.();
          else socket.write(frame(FRAME.SETTINGS, FLAG.ACK, 0, Buffer.alloc(0)));
        } else if (type === FRAME.HEADERS) {
          if (flags & FLAG.PADDED) payload = payload.subarray(1, payload.length - payload[0]);
          if (flags & FLAG.PRIORITY) payload = payload.subarray(PRIORITY_SZ);
          open = { streamId, block: Buffer.alloc(0), frames: 1, endStream: (flags & FLAG.END_STREAM) !== 0 };
          parts.length = 0;
          parts.push(Buffer.from(payload));
        } else if (type === FRAME.CONTINUATION && open !== null) {
          open.frames++;
          parts.push(Buffer.from(payload));
        } else {
          continue;
        }
        if ((type === FRAME.HEADERS || type === FRAME.CONTINUATION) && flags & FLAG.END_HEADERS && open !== null) {
          open.block = Buffer.concat(parts);
          const done = open;
          open = null;
          this.onBlock(this, done);
        }
      }
    });
  }

  /** Sends SETTINGS and resolves once the client has acked (applied) them. */
  settings(pairs: ReadonlyArray<readonly [number, number]>): Promise<void> {
    return new Promise((resolve) => {
      this.acksWanted.push(resolve);
      this.socket.write(settingsFrame(pairs));
    });
  }

  send(type: number, flags: number, streamId: number, payload: Buffer): void {
    this.socket.write(frame(type, flags, streamId, payload));
  }
}

/** A raw server on an ephemeral port; each connection gets a RawPeer that first sends an empty SETTINGS. */
export async function rawServer(
  onBlock: (peer: RawPeer, b: HeaderBlock) => void,
): Promise<{ port: number; peers: RawPeer[]; close: () => Promise<void> }> {
  const peers: RawPeer[] = [];
  const server = net.createServer((socket) => {
    socket.on('error', () => undefined); // the client may reset at close
    const peer = new RawPeer(socket, onBlock);
    peers.push(peer);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    peers,
    close: () =>
      new Promise<void>((resolve) => {
        for (const p of peers) p.socket.destroy();
        server.close(() => resolve());
      }),
  };
}

import type { Socket } from 'node:net';

// Socket reads of the own HTTP/2 server into one buffer that every connection shares, instead of a new one per
// read. By default Node gives each read (up to 64 KiB) an ArrayBuffer of its own; the connection parses it in
// place and drops it, so a peer that floods makes garbage as fast as it sends, and the process's RSS grows by
// what the collector has not reached yet (tens of MB under the flood tests, where nghttp2 in node:http2 reads
// into memory it frees at once and grows 1–3 MB). The connection copies whatever it keeps past the read (a
// partial frame, a header block, request messages: see connection.ts), so one buffer serves them all: reads
// are delivered one at a time, each to its callback before the next read is made.
//
// Node offers this as net.Socket's `onread` option, but not for the sockets a net.Server accepts; the option
// only sets three fields of the socket and switches its handle to the user buffer, which is done here the same
// way on an accepted socket before its first read. Where this Node lacks them, reads stay as they were
// ('data' events) and nothing else changes.

const READ_SIZE = 64 << 10;
let shared: Buffer | null = null;

interface ReadSymbols {
  buffer: symbol;
  callback: symbol;
  generator: symbol;
}
let symbols: ReadSymbols | null | undefined;

function findSymbols(socket: Socket): ReadSymbols | null {
  const own = Object.getOwnPropertySymbols(socket);
  const find = (d: string): symbol | undefined => own.find((s) => s.description === d);
  const buffer = find('kBuffer');
  const callback = find('kBufferCb');
  const generator = find('kBufferGen');
  return buffer === undefined || callback === undefined || generator === undefined ? null : { buffer, callback, generator };
}

/**
 * Delivers the socket's reads to `onBytes` as views of the shared buffer, valid only during the call. Call it
 * when the socket is accepted, before its first read. false: not available here, the caller reads 'data'.
 */
export function readIntoShared(socket: Socket, onBytes: (b: Buffer) => void): boolean {
  const handle = (socket as unknown as { _handle?: { useUserBuffer?: (b: Uint8Array) => void } | null })._handle;
  if (handle === undefined || handle === null || typeof handle.useUserBuffer !== 'function') return false;
  if (symbols === undefined) symbols = findSymbols(socket);
  if (symbols === null) return false;
  const fields = socket as unknown as Record<symbol, unknown>;
  // What Node's own constructor checks before it takes the option: a socket already given one is left alone.
  if (fields[symbols.buffer] !== null && fields[symbols.buffer] !== undefined) return false;
  shared ??= Buffer.allocUnsafe(READ_SIZE);
  const buf = shared;
  fields[symbols.buffer] = buf;
  fields[symbols.generator] = null;
  fields[symbols.callback] = (n: number): void => onBytes(buf.subarray(0, n));
  handle.useUserBuffer(buf);
  return true;
}

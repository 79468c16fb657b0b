import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { startHarness, type Harness } from './harness';
import { legacyTx } from './support';
import { startUpstream, type Upstream } from './upstream';

// Malformed requests and request smuggling against the submission port's HTTP/1.1 fast path
// (gateways/submit/http1-head.ts, http1-fast.ts), side by side with a plain node:http server (llhttp) given the
// same bytes. Each case is a doubtful request followed by a valid /binary one on the same connection: whatever
// splits the bytes into requests differently from llhttp would answer a different number of requests, or accept
// what llhttp refuses. The rule, per case: the submission port answers no more requests than node:http does,
// and where node:http's parser refused a request (its handler answers 200 to everything it parses), the
// submission port refuses it too. The fast path is never more lenient than llhttp.

/**
 * Where node:http's parser refused a request, the submission port must refuse it too: a 4xx. Not always the same
 * one: a head over 16 KiB gets 431 from node:http and 400 from the submission port (the fast path hands the
 * connection over with those bytes already read, and node:http then reports the overflow as a bad request).
 */
const refused = (status: number): boolean => status >= 400 && status < 500;

interface Answers {
  statuses: number[];
}

/** Reads the responses (status line, Content-Length framed) until the server closes the connection. */
function exchange(port: number, chunks: Buffer[], gapMs = 0): Promise<Answers> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    const statuses: number[] = [];
    let buf = Buffer.alloc(0);
    s.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      for (;;) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const lines = buf.toString('latin1', 0, end).split('\r\n');
        const cl = lines.find((l) => /^content-length:/i.test(l));
        const len = cl === undefined ? 0 : Number(cl.slice(cl.indexOf(':') + 1).trim());
        if (buf.length < end + 4 + len) return;
        statuses.push(Number(lines[0]!.split(' ')[1]));
        buf = buf.subarray(end + 4 + len);
        // The server closes after this answer; whatever it still wrote is no response to count.
        if (lines.some((l) => /^connection:\s*close$/i.test(l))) {
          buf = Buffer.alloc(0);
          s.removeAllListeners('data');
          s.resume();
          return;
        }
      }
    });
    s.on('error', () => undefined);
    s.on('close', () => resolve({ statuses }));
    s.once('connect', async () => {
      for (const c of chunks) {
        s.write(c);
        if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
        else await new Promise((r) => setImmediate(r));
      }
      // Half-close: both servers answer what they parsed, then close.
      s.end();
    });
    s.setTimeout(20_000, () => s.destroy());
  });
}

describe('submit HTTP/1.1: malformed and smuggled requests, side by side with node:http', function () {
  this.timeout(180_000);
  let up: Upstream;
  let h: Harness;
  let ref: http.Server;
  let refPort: number;
  before(async () => {
    up = await startUpstream();
    h = await startHarness({ upstreams: [up.url] });
    // The reference: node:http with default options, 200 to every request it parses, answered at once (an answer
    // that waited for the body could be overtaken by the 400 of a parse error that follows and closes).
    ref = http.createServer((req, res) => {
      req.resume();
      res.end('ok');
    });
    await new Promise<void>((r) => ref.listen(0, '127.0.0.1', () => r()));
    refPort = (ref.address() as AddressInfo).port;
  });
  after(async () => {
    ref.closeAllConnections();
    await new Promise<void>((r) => ref.close(() => r()));
    await h.close();
    await up.close();
  });

  const tx = legacyTx();
  const n = tx.length;
  const key = (): string => h.key;
  const valid = (): Buffer => Buffer.concat([Buffer.from(`POST /binary?api-key=${key()} HTTP/1.1\r\nHost: t\r\nContent-Length: ${n}\r\n\r\n`, 'latin1'), tx]);
  /** A doubtful request: its head lines (CRLF-joined unless `raw`), then the body bytes. */
  const doubtful = (lines: string[], body: Buffer = tx, sep = '\r\n'): Buffer =>
    Buffer.concat([Buffer.from(`POST /binary?api-key=${key()} HTTP/1.1${sep}${lines.join(sep)}${sep}${sep}`, 'latin1'), body]);
  const chunked = (b: Buffer): Buffer => Buffer.concat([Buffer.from(`${b.length.toString(16)}\r\n`), b, Buffer.from('\r\n0\r\n\r\n')]);

  const cases: Array<[string, () => Buffer]> = [
    ['the plain request (the baseline)', () => doubtful(['Host: t', `Content-Length: ${n}`])],
    ['Content-Length twice, equal', () => doubtful(['Host: t', `Content-Length: ${n}`, `Content-Length: ${n}`])],
    ['Content-Length twice, different', () => doubtful(['Host: t', `Content-Length: ${n}`, `Content-Length: ${n + 5}`])],
    ['Content-Length as a list', () => doubtful(['Host: t', `Content-Length: ${n}, ${n}`])],
    ['Content-Length with a sign', () => doubtful(['Host: t', `Content-Length: +${n}`])],
    ['Content-Length with leading zeros', () => doubtful(['Host: t', `Content-Length: 000${n}`])],
    ['Content-Length in hex', () => doubtful(['Host: t', `Content-Length: 0x${n.toString(16)}`])],
    ['Content-Length with a space before the colon', () => doubtful(['Host: t', `Content-Length : ${n}`])],
    ['Content-Length and Transfer-Encoding: chunked', () => doubtful(['Host: t', `Content-Length: ${n}`, 'Transfer-Encoding: chunked'], chunked(tx))],
    ['Transfer-Encoding: chunked then Content-Length', () => doubtful(['Host: t', 'Transfer-Encoding: chunked', `Content-Length: ${n}`], chunked(tx))],
    ['Transfer-Encoding: chunked, identity', () => doubtful(['Host: t', 'Transfer-Encoding: chunked, identity', `Content-Length: ${n}`], chunked(tx))],
    ['Transfer-Encoding with a tab', () => doubtful(['Host: t', 'Transfer-Encoding:\tchunked', `Content-Length: ${n}`], chunked(tx))],
    ['obs-fold of a header', () => doubtful(['Host: t', 'X-A: 1', ' folded', `Content-Length: ${n}`])],
    ['obs-fold of Content-Length', () => doubtful(['Host: t', 'Content-Length:', ` ${n}`])],
    ['bare LF line ends', () => doubtful(['Host: t', `Content-Length: ${n}`], tx, '\n')],
    ['a bare LF inside the head', () => doubtful(['Host: t\nX-A: b', `Content-Length: ${n}`])],
    ['a bare CR inside a value', () => doubtful(['Host: t', 'X-A: a\rb', `Content-Length: ${n}`])],
    ['NUL in a value', () => doubtful(['Host: t', 'X-A: a\x00b', `Content-Length: ${n}`])],
    ['a control byte in a value', () => doubtful(['Host: t', 'X-A: a\x01b', `Content-Length: ${n}`])],
    ['DEL in a name', () => doubtful(['Host: t', 'X-\x7fA: b', `Content-Length: ${n}`])],
    ['NUL in the target', () => Buffer.concat([Buffer.from(`POST /binary?api-key=${key()}\x00 HTTP/1.1\r\nHost: t\r\nContent-Length: ${n}\r\n\r\n`, 'latin1'), tx])],
    ['a space in the target', () => Buffer.concat([Buffer.from(`POST /binary?a b HTTP/1.1\r\nHost: t\r\nContent-Length: ${n}\r\n\r\n`, 'latin1'), tx])],
    ['two Hosts', () => doubtful(['Host: t', 'Host: u', `Content-Length: ${n}`])],
    ['no Host', () => doubtful([`Content-Length: ${n}`])],
    ['a head of 9 KiB (over the fast limit, under node:http\'s)', () => doubtful(['Host: t', `X-Pad: ${'a'.repeat(9 << 10)}`, `Content-Length: ${n}`])],
    ['a head of 17 KiB (over node:http\'s limit)', () => doubtful(['Host: t', `X-Pad: ${'a'.repeat(17 << 10)}`, `Content-Length: ${n}`])],
    ['HTTP/1.0 with Content-Length', () => Buffer.concat([Buffer.from(`POST /binary?api-key=${key()} HTTP/1.0\r\nHost: t\r\nContent-Length: ${n}\r\n\r\n`, 'latin1'), tx])],
    ['a declared length shorter than the body', () => doubtful(['Host: t', `Content-Length: ${n - 10}`])],
    ['garbage', () => Buffer.from('\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03', 'latin1')],
  ];

  for (const [what, make] of cases) {
    it(`${what}: no more lenient than node:http`, async () => {
      const bytes = Buffer.concat([make(), valid()]);
      const [ours, theirs] = await Promise.all([exchange(h.service.http.port, [bytes]), exchange(refPort, [bytes])]);
      const msg = `submission ${JSON.stringify(ours.statuses)}, node:http ${JSON.stringify(theirs.statuses)}`;
      assert.ok(ours.statuses.length <= theirs.statuses.length, `more requests answered than node:http parsed: ${msg}`);
      theirs.statuses.forEach((st, i) => {
        if (st !== 200 && i < ours.statuses.length) assert.ok(refused(ours.statuses[i]!), `node:http refused request ${i + 1}: ${msg}`);
      });
      if (what.startsWith('the plain')) assert.deepEqual(ours.statuses, [200, 200], msg);
    });
  }

  it('pipelined requests split at every byte: each split answered as node:http answers it', async () => {
    // Two cases that matter for framing: a plain pair, and Content-Length with Transfer-Encoding before a valid one.
    for (const first of [valid(), doubtful(['Host: t', `Content-Length: ${n}`, 'Transfer-Encoding: chunked'], chunked(tx))]) {
      const bytes = Buffer.concat([first, valid()]);
      const whole = await exchange(refPort, [bytes]);
      for (let i = 1; i < bytes.length; i++) {
        const split = [bytes.subarray(0, i), bytes.subarray(i)];
        const ours = await exchange(h.service.http.port, split);
        assert.ok(ours.statuses.length <= whole.statuses.length, `split at ${i}: submission ${JSON.stringify(ours.statuses)}, node:http ${JSON.stringify(whole.statuses)}`);
        whole.statuses.forEach((st, k) => {
          if (st !== 200 && k < ours.statuses.length) assert.ok(refused(ours.statuses[k]!), `split at ${i}: submission ${JSON.stringify(ours.statuses)}, node:http ${JSON.stringify(whole.statuses)}`);
        });
      }
    }
  });

  it('a slow head (one byte per write, 2 ms apart) is answered as node:http answers it', async () => {
    const bytes = Buffer.concat([valid(), doubtful(['Host: t', `Content-Length: ${n}`, `Content-Length: ${n + 1}`])]);
    const chunks = Array.from({ length: bytes.length }, (_, i) => bytes.subarray(i, i + 1));
    const [ours, theirs] = await Promise.all([exchange(h.service.http.port, chunks, 2), exchange(refPort, chunks, 2)]);
    assert.deepEqual(theirs.statuses, [200, 400]);
    assert.deepEqual(ours.statuses, [200, 400]);
  });
});

import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { MAX_FAST_HEAD, parseHead, type BodyLimits } from '../../../gateways/submit/http1-head';

// The fast path's request-head parser: what it takes, what it leaves to node:http, and — fuzzed — that
// whatever it takes, node:http would have read the same way (same target, same body length).

const LIMITS: BodyLimits = { binary: 1232, plaintext: 2048, jsonrpc: 3072 };
const KEY = '5d0c0b7e-3f7e-4b1a-9d2c-6a1b2c3d4e5f';

function head(lines: string[]): Buffer {
  return Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
}

const GOOD = [`POST /binary?api-key=${KEY} HTTP/1.1`, 'Host: x', 'Content-Type: application/octet-stream', 'Content-Length: 10'];

describe('submit fast path: request head parser', () => {
  it('reads the plain POST to /binary, /plaintext and / (JSON-RPC)', () => {
    const b = Buffer.concat([head(GOOD), Buffer.alloc(10)]);
    const h = parseHead(b, 0, LIMITS);
    assert.equal(h.kind, 'request');
    if (h.kind !== 'request') return;
    assert.deepEqual([h.route, h.target, h.contentLength, h.bodyStart], ['binary', `/binary?api-key=${KEY}`, 10, b.length - 10]);
    const p = parseHead(head(['POST /plaintext HTTP/1.1', 'hOsT: y', 'content-LENGTH:   2048  ', 'Connection: Keep-Alive']), 0, LIMITS);
    assert.deepEqual(p.kind === 'request' ? [p.route, p.target, p.contentLength] : p, ['plaintext', '/plaintext', 2048]);
    const j = parseHead(head([`POST /?api-key=${KEY} HTTP/1.1`, 'Host: y', 'Content-Type: application/json', 'Content-Length: 3072']), 0, LIMITS);
    assert.deepEqual(j.kind === 'request' ? [j.route, j.target, j.contentLength] : j, ['jsonrpc', `/?api-key=${KEY}`, 3072]);
    const bare = parseHead(head(['POST / HTTP/1.1', 'Host: y', 'Content-Length: 2']), 0, LIMITS);
    assert.deepEqual(bare.kind === 'request' ? [bare.route, bare.target] : bare, ['jsonrpc', '/']);
  });

  it('reads a second request from an offset', () => {
    const one = Buffer.concat([head(GOOD), Buffer.alloc(10)]);
    const two = Buffer.concat([one, one]);
    const h = parseHead(two, one.length, LIMITS);
    assert.equal(h.kind === 'request' ? h.bodyStart : -1, two.length - 10);
  });

  it('every proper prefix of a fast request is partial', () => {
    const b = head(GOOD);
    for (let n = 0; n < b.length; n++) assert.equal(parseHead(b.subarray(0, n), 0, LIMITS).kind, 'partial', `prefix of ${n} bytes`);
  });

  it('leaves everything else to node:http', () => {
    const other: Array<[string, string[]]> = [
      ['another method', [`GET /binary HTTP/1.1`, 'Host: x', 'Content-Length: 0']],
      ['lower-case method', [`post /binary HTTP/1.1`, 'Host: x', 'Content-Length: 1']],
      ['another route', [`POST /binaryx HTTP/1.1`, 'Host: x', 'Content-Length: 1']],
      ['an unknown path', [`POST /nope?api-key=${KEY} HTTP/1.1`, 'Host: x', 'Content-Length: 1']],
      ['a path below the root', [`POST //binary HTTP/1.1`, 'Host: x', 'Content-Length: 1']],
      ['a JSON-RPC body over the limit', [`POST / HTTP/1.1`, 'Host: x', 'Content-Length: 3073']],
      ['HTTP/1.0', [`POST /binary HTTP/1.0`, 'Host: x', 'Content-Length: 1']],
      ['no Host', [`POST /binary HTTP/1.1`, 'Content-Length: 1']],
      ['two Hosts', [`POST /binary HTTP/1.1`, 'Host: x', 'Host: y', 'Content-Length: 1']],
      ['no Content-Length', [`POST /binary HTTP/1.1`, 'Host: x']],
      ['two Content-Lengths', [`POST /binary HTTP/1.1`, 'Host: x', 'Content-Length: 1', 'Content-Length: 1']],
      ['a signed Content-Length', [`POST /binary HTTP/1.1`, 'Host: x', 'Content-Length: +1']],
      ['an empty Content-Length', [`POST /binary HTTP/1.1`, 'Host: x', 'Content-Length: ']],
      ['a body over the limit', [`POST /binary HTTP/1.1`, 'Host: x', 'Content-Length: 1233']],
      ['a plaintext body over the limit', [`POST /plaintext HTTP/1.1`, 'Host: x', 'Content-Length: 2049']],
      ['chunked', [`POST /binary HTTP/1.1`, 'Host: x', 'Transfer-Encoding: chunked']],
      ['chunked and a length', [`POST /binary HTTP/1.1`, 'Host: x', 'Content-Length: 5', 'Transfer-Encoding: chunked']],
      ['Expect', [`POST /binary HTTP/1.1`, 'Host: x', 'Expect: 100-continue', 'Content-Length: 1']],
      ['Upgrade', [`POST /binary HTTP/1.1`, 'Host: x', 'Upgrade: h2c', 'Content-Length: 1']],
      ['Connection: close', [`POST /binary HTTP/1.1`, 'Host: x', 'Connection: close', 'Content-Length: 1']],
      ['obs-fold', [`POST /binary HTTP/1.1`, 'Host: x', 'X-A: 1', ' folded', 'Content-Length: 1']],
      ['space before the colon', [`POST /binary HTTP/1.1`, 'Host: x', 'Content-Length : 1']],
      ['a control byte in a value', [`POST /binary HTTP/1.1`, 'Host: x', 'X-A: a\x00b', 'Content-Length: 1']],
      ['a bare LF in a value', [`POST /binary HTTP/1.1`, 'Host: x', 'X-A: a\nb', 'Content-Length: 1']],
      ['a control byte in the target', [`POST /binary?\x01 HTTP/1.1`, 'Host: x', 'Content-Length: 1']],
      ['two spaces before the version', [`POST /binary  HTTP/1.1`, 'Host: x', 'Content-Length: 1']],
    ];
    for (const [why, lines] of other) assert.equal(parseHead(head(lines), 0, LIMITS).kind, 'other', why);
    assert.equal(parseHead(Buffer.from('GET / HT'), 0, LIMITS).kind, 'other', 'a prefix that cannot become a fast request');
    const long = Buffer.concat([Buffer.from(`POST /binary HTTP/1.1\r\nHost: x\r\nX-Pad: `), Buffer.alloc(MAX_FAST_HEAD, 0x61)]);
    assert.equal(parseHead(long, 0, LIMITS).kind, 'other', 'a head over the fast limit');
  });

  it('fuzzed: never throws; whatever it takes, node:http reads with the same target and body length', async function () {
    this.timeout(120_000);
    // node:http as the reference: a server that records what it parsed from each connection's one request.
    const seen: Array<{ url: string; length: number }> = [];
    const server = http.createServer((req, res) => {
      let n = 0;
      req.on('data', (c: Buffer) => (n += c.length));
      req.on('end', () => {
        seen.push({ url: req.url ?? '', length: n });
        res.end('ok');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as AddressInfo).port;
    const viaNode = (bytes: Buffer): Promise<{ url: string; length: number } | null> =>
      new Promise((resolve) => {
        const before = seen.length;
        const s = net.connect(port, '127.0.0.1', () => s.end(bytes));
        let settled = false;
        const done = (): void => {
          if (settled) return;
          settled = true;
          resolve(seen.length > before ? seen[seen.length - 1]! : null);
        };
        s.on('data', () => undefined);
        s.on('close', done);
        s.on('error', done);
      });

    // Mutations of real request heads: bytes replaced, inserted or deleted, with a bias to the bytes that matter.
    const alphabet = fc.constantFrom(...[' ', '\r', '\n', '\t', ':', '0', '9', '+', '-', 'a', 'A', '\x00', '\x7f', '\xff', ',', 'chunked', 'Content-Length: 3\r\n', 'Host: z\r\n', 'Transfer-Encoding', 'close', 'HTTP/1.0'].map((s) => Buffer.from(s, 'latin1')));
    const bases = [
      Buffer.concat([head(GOOD), Buffer.alloc(10, 0x42)]),
      Buffer.concat([head([`POST /?api-key=${KEY} HTTP/1.1`, 'Host: x', 'Content-Type: application/json', 'Content-Length: 10']), Buffer.alloc(10, 0x42)]),
    ];
    const mutation = fc.record({ at: fc.nat(bases[0]!.length), del: fc.nat(3), ins: alphabet });
    const mutated = fc.tuple(fc.constantFrom(...bases), fc.array(mutation, { minLength: 1, maxLength: 4 })).map(([base, ms]) => {
      let b = base;
      for (const m of ms) {
        const at = Math.min(m.at, b.length);
        b = Buffer.concat([b.subarray(0, at), m.ins, b.subarray(Math.min(b.length, at + m.del))]);
      }
      return b;
    });

    let taken = 0;
    let compared = 0;
    const samples = fc.sample(mutated, { numRuns: 3000, seed: 20261123 });
    for (const b of samples) {
      const h = parseHead(b, 0, LIMITS); // must not throw
      if (h.kind !== 'request') continue;
      taken++;
      if (h.bodyStart + h.contentLength > b.length) continue; // incomplete: nothing to compare yet
      if (compared >= 300) continue;
      compared++;
      const n = await viaNode(b.subarray(0, h.bodyStart + h.contentLength));
      assert.deepEqual(n, { url: h.target, length: h.contentLength }, `node:http read ${JSON.stringify(b.toString('latin1'))} differently`);
    }
    await new Promise<void>((r) => server.close(() => r()));
    assert.ok(taken > 100 && compared > 50, `enough accepted mutations to compare (taken ${taken}, compared ${compared})`);
  });
});

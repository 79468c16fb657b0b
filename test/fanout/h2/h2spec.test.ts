import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { subscribePath } from '../../../proto/service';
import { startTestFanout } from '../support';
import { ensureH2spec, goToolchain } from './h2spec-build';
import { portOf } from './support';

// h2spec, a third-party HTTP/2 conformance suite (h2spec-build.ts says how it is built and pinned), run in one
// test against the stream endpoint on both transports (fanout.transport h2, our own server, and grpc-js) and
// against a plain node:http2 server (nghttp2) as the reference. The rule: no case nghttp2 passes in this run may
// fail on either transport, except the ones listed in TOLERATED with their reason. Skipped, with a note, when
// Go is not on PATH.

const PATH = subscribePath('arpc.ARPCService');
/** Seconds h2spec waits for each expected frame: generous on a loaded machine (a pass never waits it out). */
const CASE_TIMEOUT_S = 3;

type Transport = 'h2' | 'grpc-js';

/**
 * Cases a transport may fail although nghttp2 passes them, each with why (h2spec's section/number as the id).
 * The own server has no timing exception: it keeps a stream it has answered until the peer ends or resets it
 * (half-closed (local), RFC 9113 §5.1) and remembers how recent streams closed, so a frame that follows a request
 * gets the same answer whether it arrives before or after the response left. (It also fails 5.1.2/1, which
 * nghttp2 skips, so the rule does not count it: each of h2spec's streams is a GET the own server answers with a
 * headers-only 405 and END_STREAM, which closes it at once, so its streams are never more than the advertised
 * limit at a time; RFC 9113 §5.1.2 counts only open and half-closed streams.)
 */
const TOLERATED: ReadonlyArray<{ id: string; transports: readonly Transport[]; reason: string }> = [
  // h2spec opens a stream with END_STREAM (a GET), sends WINDOW_UPDATE (2/2) or PRIORITY (2/3) on it and takes a
  // DATA frame as proof that the stream went on. A gRPC endpoint answers a GET without a body: 405 from the own
  // server, a trailers-only status from grpc-js. The frames were accepted (no error); the reference server
  // answers with a body.
  { id: 'generic/2/2', transports: ['h2', 'grpc-js'], reason: "a gRPC endpoint answers h2spec's GET without a DATA frame" },
  { id: 'generic/2/3', transports: ['h2', 'grpc-js'], reason: "a gRPC endpoint answers h2spec's GET without a DATA frame" },
  // These cases send a faulty frame on a stream after its request's HEADERS: DATA or HEADERS after END_STREAM
  // (5.1/5, 5.1/6, 6.1/2), DATA with a bad pad length (6.1/3), a zero or overflowing WINDOW_UPDATE (6.9/2,
  // 6.9.1/3), a second HEADERS without END_STREAM (8.1/1), a pseudo-header in trailers (8.1.2.1/3), DATA that
  // disagrees with content-length (8.1.2.6/1-2). grpc-js answers h2spec's requests at their HEADERS (a GET, or a
  // POST without a gRPC content-type: a trailers-only status) without reading them, and node:http2 then closes
  // such a stream with RST_STREAM NO_ERROR one event-loop turn later (Http2Stream's kMaybeDestroy: a server
  // stream answered and never read). When the faulty frame arrives after that, nghttp2 no longer has the stream
  // and ignores the frame; before it, nghttp2 answers as h2spec wants. Which comes first is the machine's timing,
  // inside grpc-js and node:http2 (in surveys on this machine each case failed in 3-20% of runs).
  ...['http2/5.1/5', 'http2/5.1/6', 'http2/6.1/2', 'http2/6.1/3', 'http2/6.9/2', 'http2/6.9.1/3', 'http2/8.1/1', 'http2/8.1.2.1/3', 'http2/8.1.2.6/1', 'http2/8.1.2.6/2'].map((id) => ({
    id,
    transports: ['grpc-js'] as const,
    reason: 'grpc-js answers the request at its HEADERS and node:http2 closes the unread stream a turn later; a faulty frame arriving after that is ignored',
  })),
];

type Outcome = 'passed' | 'failed' | 'skipped';

/** h2spec's JUnit report as case id (package/number, e.g. http2/5.1/6) → outcome. */
function parseJunit(xml: string): Map<string, Outcome> {
  const out = new Map<string, Outcome>();
  const suiteRe = /<testsuite [^>]*package="([^"]+)"[^>]*>([\s\S]*?)<\/testsuite>/g;
  for (const m of xml.matchAll(suiteRe)) {
    const pkg = m[1]!;
    let n = 0;
    const caseRe = /<testcase [^>]*?(\/>|>([\s\S]*?)<\/testcase>)/g;
    for (const c of m[2]!.matchAll(caseRe)) {
      n++;
      const body = c[2] ?? '';
      out.set(`${pkg}/${n}`, /<(failure|error)/.test(body) ? 'failed' : /<skipped/.test(body) ? 'skipped' : 'passed');
    }
  }
  return out;
}

/** Runs h2spec against 127.0.0.1:port; its outcomes and its summary line. */
async function runH2spec(bin: string, port: number, dir: string, name: string): Promise<{ cases: Map<string, Outcome>; summary: string }> {
  const report = path.join(dir, `${name}.xml`);
  const args = ['-h', '127.0.0.1', '-p', String(port), '-P', PATH, '-o', String(CASE_TIMEOUT_S), '-j', report];
  const out = await new Promise<string>((resolve, reject) => {
    const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    child.stdout.on('data', (b: Buffer) => (text += b.toString('utf8')));
    child.stderr.on('data', (b: Buffer) => (text += b.toString('utf8')));
    child.once('error', reject);
    // h2spec exits 1 when any case fails: the report is what counts.
    child.once('close', () => resolve(text));
  });
  assert.ok(fs.existsSync(report), `h2spec wrote no report for ${name}:\n${out.slice(-2000)}`);
  const cases = parseJunit(fs.readFileSync(report, 'utf8'));
  assert.ok(cases.size > 100, `h2spec reported only ${cases.size} cases for ${name}`);
  const summary = /\d+ tests, \d+ passed, \d+ skipped, \d+ failed/.exec(out)?.[0] ?? '(no summary)';
  return { cases, summary };
}

/** The reference: node:http2's server (nghttp2) answering every request with a small body. */
async function startNghttp2(): Promise<{ port: number; close: () => Promise<void> }> {
  const server = http2.createServer();
  server.on('stream', (stream) => {
    stream.on('error', () => undefined);
    try {
      stream.respond({ ':status': 200, 'content-type': 'text/plain' });
      stream.end('ok');
    } catch {
      // h2spec resets streams under the handler's feet
    }
  });
  server.on('sessionError', () => undefined);
  // server.close() waits for every session to end, and h2spec leaves some open.
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (s) => {
    sessions.add(s);
    s.on('close', () => sessions.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sessions) s.destroy();
      }),
  };
}

describe('fanout/h2 conformance (h2spec) against nghttp2', function () {
  this.timeout(600_000);
  let bin: string;

  before(async function () {
    if (goToolchain() === null) {
      console.log('      NOTE: h2spec conformance skipped: no Go toolchain on PATH (go version failed)');
      this.skip();
    }
    bin = await ensureH2spec();
  });

  it('no case nghttp2 passes fails on the own HTTP/2 server or on grpc-js (TOLERATED excepted)', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'h2spec-'));
    try {
      const ref = await startNghttp2();
      let nghttp2: Awaited<ReturnType<typeof runH2spec>>;
      try {
        nghttp2 = await runH2spec(bin, ref.port, dir, 'nghttp2');
      } finally {
        await ref.close();
      }
      const results: Array<[Transport, Awaited<ReturnType<typeof runH2spec>>]> = [];
      const worse: string[] = [];
      const tolerated: string[] = [];
      const failed: string[] = [];
      for (const transport of ['h2', 'grpc-js'] as const satisfies readonly Transport[]) {
        const f = await startTestFanout({ transport });
        try {
          const port = portOf(f.address);
          const r = await runH2spec(bin, port, dir, transport);
          results.push([transport, r]);
          for (const [id, outcome] of r.cases) {
            if (outcome !== 'failed') continue;
            failed.push(`${transport}: ${id}`);
            if (nghttp2.cases.get(id) !== 'passed') continue;
            if (TOLERATED.some((t) => t.id === id && t.transports.includes(transport))) tolerated.push(`${transport}: ${id}`);
            else worse.push(`${transport}: ${id}`);
          }
        } finally {
          await f.close();
        }
      }
      console.log(`      h2spec: nghttp2 ${nghttp2.summary}; ${results.map(([t, r]) => `${t} ${r.summary}`).join('; ')}`);
      const refFailed = [...nghttp2.cases].filter(([, o]) => o === 'failed').map(([id]) => id);
      console.log(`      h2spec: failed on nghttp2: ${refFailed.join(', ')}`);
      console.log(`      h2spec: failed on the transports: ${failed.join(', ')}`);
      if (tolerated.length > 0) console.log(`      h2spec: failed and tolerated (nghttp2 passed them): ${tolerated.join(', ')}`);
      assert.deepEqual(worse, [], 'cases nghttp2 passes and a transport fails');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

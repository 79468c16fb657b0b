import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { cachedGoBinary } from '../support/go-binary';
import { projectRoot } from '../support/paths';

// The chain gateway bench's compiled load client (test/bench/httpload, Go: raw HTTP/1.1 keep-alive, one request
// in flight per connection; its README is the comment at the top of main.go), built with `go build` on first use
// into `$MERIDIAN_CACHE/httpload` (else `<project>/.cache/…`), rebuilt only when a hash of its sources and of `go
// version` changes. No dependencies beyond Go's standard library.

export interface HttpTarget {
  addr: string;
  path: string;
}

export interface ThruResult {
  ok: number;
  failed: number;
  wallMs: number;
  /** The load client's own CPU (user + system) during the run. */
  cpuMs: number;
}

export interface LatResult {
  /** Per target, N samples in ms, round by round. */
  ms: Float64Array[];
  cpuMs: number;
}

export function targetOf(url: string): HttpTarget {
  const u = new URL(url);
  return { addr: u.host, path: u.pathname === '' ? '/' : u.pathname };
}

function sourceDir(): string {
  return path.join(projectRoot(), 'test', 'bench', 'httpload');
}

function sourceHash(version: string): string {
  const h = crypto.createHash('sha256').update(version);
  for (const f of fs.readdirSync(sourceDir()).filter((n) => n === 'go.mod' || n.endsWith('.go')).sort()) h.update(`\0${f}\0`).update(fs.readFileSync(path.join(sourceDir(), f)));
  return h.digest('hex');
}

function goBuild(out: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('go', ['build', '-trimpath', '-o', out, '.'], { cwd: sourceDir(), stdio: ['ignore', 'pipe', 'pipe'] });
    let tail = '';
    const onData = (b: Buffer): void => void (tail = (tail + b.toString('utf8')).slice(-8_000));
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('error', (e) => reject(new Error(`cannot run go: ${e.message}`)));
    child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`go build of httpload exited with ${code}:\n${tail.trim()}`))));
  });
}

/** `go version`, or null without a Go toolchain. */
export function goAvailable(): string | null {
  const r = spawnSync('go', ['version'], { encoding: 'utf8', timeout: 10_000 });
  return r.status === 0 ? r.stdout.trim() : null;
}

export class HttpLoad {
  private readonly lines: AsyncIterator<string>;

  private constructor(private readonly proc: ChildProcessWithoutNullStreams) {
    proc.stderr.on('data', (b: Buffer) => process.stderr.write(b));
    this.lines = readline.createInterface({ input: proc.stdout })[Symbol.asyncIterator]();
  }

  static async start(): Promise<HttpLoad> {
    const version = goAvailable();
    if (version === null) throw new Error('no Go toolchain on PATH (go version failed)');
    const cache = path.join(process.env.MERIDIAN_CACHE ?? path.join(projectRoot(), '.cache'), 'httpload');
    const bin = await cachedGoBinary(cache, 'httpload', sourceHash(version), goBuild);
    return new HttpLoad(spawn(bin, [], { stdio: ['pipe', 'pipe', 'pipe'] }));
  }

  private async ask(cmd: Record<string, unknown>): Promise<Record<string, unknown>> {
    this.proc.stdin.write(`${JSON.stringify(cmd)}\n`);
    const next = await this.lines.next();
    if (next.done === true) throw new Error('httpload exited');
    const m = JSON.parse(next.value) as Record<string, unknown>;
    if (m.type === 'error') throw new Error(`httpload: ${String(m.message)}`);
    return m;
  }

  async thru(target: HttpTarget, body: Buffer, ms: number, conns: number): Promise<ThruResult> {
    const m = await this.ask({ cmd: 'thru', targets: [target], body: body.toString('base64'), ms, conns });
    return { ok: m.ok as number, failed: m.failed as number, wallMs: m.wallMs as number, cpuMs: m.cpuMs as number };
  }

  /** n rounds of one request to each target in turn (round i starts at target i mod k). */
  async lat(targets: HttpTarget[], body: Buffer, n: number): Promise<LatResult> {
    const m = await this.ask({ cmd: 'lat', targets, body: body.toString('base64'), n });
    return { ms: (m.us as number[][]).map((a) => Float64Array.from(a, (v) => v / 1000)), cpuMs: m.cpuMs as number };
  }

  close(): Promise<void> {
    const exited = new Promise<void>((r) => this.proc.once('exit', () => r()));
    this.proc.stdin.end();
    return exited;
  }
}

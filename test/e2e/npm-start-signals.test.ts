import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import dgram from 'node:dgram';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Endpoints } from '../../infra/base/endpoints';
import { ensureTerminatorBinary, TERMINATOR_BIN } from '../../gateways/submit/quic/terminator-build';
import { ephemeralListenEnv, type Json } from '../support/ephemeral-env';
import { projectRoot } from '../support/paths';
import { waitFor } from '../support/wait';

// Every way an operator stops the service, through `npm start` itself on a fresh clone: SIGTERM to npm's PID (what
// process managers, `timeout`, IDE stop buttons and container runtimes send), SIGINT to npm's PID, and `meridian
// start` run directly with no --config (the bin runs the same local service as `npm start`, every surface). Each
// stop must end every process the run started (the anvils and the QUIC terminator live in their own process
// groups, so each is found by parent PID before the stop), free every port, remove the endpoints file and log no
// error-level line. Linux only for the process walk (/proc); elsewhere that part is skipped.
//
// As in fresh-clone.test.ts: node_modules is a symlink to this checkout's install, listeners are moved to
// ephemeral ports, and the QUIC terminator's build cache is shared.

interface Run {
  child: ChildProcess;
  out: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  endpoints: Endpoints;
  file: string;
}

/** PIDs of every process below `pid` (any process group), from /proc; [] where there is no /proc. */
function descendants(pid: number): number[] {
  if (!fs.existsSync('/proc/self/stat')) return [];
  const parent = new Map<number, number>();
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // after "pid (comm) ": state ppid …
      parent.set(Number(d), Number(fields[1]));
    } catch {
      // ended while we looked
    }
  }
  const out: number[] = [];
  const todo = [pid];
  while (todo.length > 0) {
    const p = todo.pop()!;
    for (const [c, pp] of parent) if (pp === p) {
      out.push(c);
      todo.push(c);
    }
  }
  return out;
}

function alive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

function hostPort(v: string): { host: string; port: number } {
  const u = /^[a-z]+:\/\//.test(v) ? new URL(v) : new URL(`x://${v}`);
  return { host: u.hostname.replace(/^\[(.*)\]$/, '$1'), port: Number(u.port) };
}

async function tcpFree(a: { host: string; port: number }): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(a.port, a.host, () => s.close(() => resolve(true)));
  });
}

async function udpFree(a: { host: string; port: number }): Promise<boolean> {
  return new Promise((resolve) => {
    const s = dgram.createSocket(a.host.includes(':') ? 'udp6' : 'udp4');
    s.once('error', () => resolve(false));
    s.bind(a.port, a.host, () => s.close(() => resolve(true)));
  });
}

/** Every address the endpoints file names, by transport. */
function addresses(e: Endpoints): { tcp: string[]; udp: string[] } {
  const tcp = [e.metrics, e.admin, e.chain?.http, e.stream, e.rpc?.http, e.rpc?.ws, e.submit?.http, ...Object.values(e.evm ?? {}).flatMap((c) => [c.http, c.ws])];
  const udp = [e.ingest, e.submit?.udp, e.submit?.quic];
  return { tcp: tcp.filter((x): x is string => x !== undefined), udp: udp.filter((x): x is string => x !== undefined) };
}

/** A getSlot to the chain gateway from a given loopback source address (the gateway admits callers by IP). */
function getSlotFrom(localAddress: string, to: { host: string; port: number }): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'getSlot' });
    const req = http.request({ host: to.host, port: to.port, method: 'POST', path: '/', localAddress, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => {
        try {
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as unknown });
        } catch {
          resolve({ status: res.statusCode ?? 0, body: text });
        }
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** node ARGS in a folder, to the end: exit code and output. */
function runIn(cwd: string, args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { cwd, env: { ...process.env, KAFKA_BROKERS: '' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('close', (code) => resolve({ code, out, err }));
  });
}

describe('stopping the service: npm start by SIGTERM and SIGINT to its PID; meridian start with no --config, and a rental put on it', function () {
  this.timeout(1_200_000);
  let dir: string | undefined;
  let clone = '';
  let env: NodeJS.ProcessEnv = {};
  const running: ChildProcess[] = [];

  before(async function () {
    this.timeout(1_200_000); // a first run compiles the QUIC terminator
    const root = projectRoot();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'meridian-stop-'));
    clone = path.join(dir, 'meridian');
    execFileSync('git', ['clone', '--quiet', root, clone], { stdio: 'pipe' });
    fs.symlinkSync(path.join(root, 'node_modules'), path.join(clone, 'node_modules'));
    const local = JSON.parse(fs.readFileSync(path.join(clone, 'infra', 'config', 'local.json'), 'utf8')) as Json;
    await ensureTerminatorBinary(TERMINATOR_BIN, (line) => process.stdout.write(`      ${line}\n`));
    // The clone finds the terminator just built where this process built it: cargo targets live outside the work
    // tree (~/.cache/meridian, or $MERIDIAN_CACHE when set, which the clone inherits).
    env = { ...process.env, ...ephemeralListenEnv(local), MERIDIAN__BILLING__OUT_DIR: path.join(dir, 'billing') };
  });

  after(async () => {
    for (const c of running) {
      if (c.exitCode === null && c.signalCode === null) {
        try {
          process.kill(-c.pid!, 'SIGKILL');
        } catch {
          c.kill('SIGKILL');
        }
      }
    }
    if (dir !== undefined) fs.rmSync(dir, { recursive: true, force: true });
  });

  async function start(cmd: string, args: string[]): Promise<Run> {
    // detached: a process group of its own, like a job a shell or a process manager starts.
    const child = spawn(cmd, args, { cwd: clone, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    running.push(child);
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => child.once('exit', (code, signal) => r({ code, signal })));
    const file = path.join(clone, '.meridian', 'endpoints.json');
    await waitFor(() => {
      if (child.exitCode !== null) throw new Error(`${cmd} ${args.join(' ')} exited (${child.exitCode}):\n${out}`);
      return fs.existsSync(file);
    }, 600_000, file, 200);
    const endpoints = JSON.parse(fs.readFileSync(file, 'utf8')) as Endpoints;
    return { child, out: () => out, exited, endpoints, file };
  }

  async function stopsCleanly(r: Run, signal: NodeJS.Signals): Promise<void> {
    const below = descendants(r.child.pid!);
    if (process.platform === 'linux') assert.ok(below.length >= 3, `node, two anvils, the terminator under ${r.child.pid}: ${below.join(' ')}`);
    process.kill(r.child.pid!, signal); // the PID only, not the group
    const end = await r.exited;
    assert.equal(end.code, 0, `${JSON.stringify(end)}\n${r.out()}`);
    await waitFor(() => below.every((p) => !alive(p)), 20_000, `every process of the run ended (${below.filter(alive).join(' ')})`, 100);
    assert.equal(fs.existsSync(r.file), false, 'the endpoints file goes with the service');
    const { tcp, udp } = addresses(r.endpoints);
    for (const a of tcp) assert.ok(await tcpFree(hostPort(a)), `${a} is free again`);
    for (const a of udp) assert.ok(await udpFree(hostPort(a)), `${a} is free again`);
    assert.match(r.out(), /"msg":"stopped"|\bstopped\b/);
    assert.doesNotMatch(r.out(), /"level":50/, r.out());
    assert.doesNotMatch(r.out(), /npm error/, r.out());
  }

  it('`npm start`, then SIGTERM to npm\'s PID: everything stops, ports free, endpoints file removed, no error line', async () => {
    const r = await start('npm', ['start']);
    await stopsCleanly(r, 'SIGTERM');
  });

  it('`npm start`, then SIGINT to npm\'s PID: the same', async () => {
    const r = await start('npm', ['start']);
    await stopsCleanly(r, 'SIGINT');
  });

  it('`meridian start` with no --config serves every surface of the local run, admits `rentals put --id me --ip 127.0.0.2 --rps 10`, and SIGHUP stops it like SIGTERM', async () => {
    // Built by the npm start runs above; built here when this case runs alone.
    if (!fs.existsSync(path.join(clone, 'dist', 'infra', 'cli.js'))) execFileSync('npm', ['run', 'build'], { cwd: clone, stdio: 'pipe' });
    const r = await start(process.execPath, [path.join(clone, 'dist', 'infra', 'cli.js'), 'start']);
    const e = r.endpoints;
    for (const k of ['metrics', 'admin', 'chain', 'ingest', 'stream', 'rpc', 'submit', 'evm', 'demo'] as const) assert.ok(e[k] !== undefined, `${k} in ${JSON.stringify(Object.keys(e))}`);
    assert.ok(e.submit!.http !== undefined && e.submit!.udp !== undefined && e.submit!.quic !== undefined, JSON.stringify(e.submit));
    assert.deepEqual(Object.keys(e.evm!).sort(), ['137', '56']);
    assert.ok((e.demo!.accounts ?? []).length > 0, JSON.stringify(e.demo));

    // The simplest rental put is admitted on the local run: the CLI learns the service's regions from it.
    const rpc = hostPort(e.rpc!.http);
    const before = await getSlotFrom('127.0.0.2', rpc);
    assert.equal(before.status, 403, JSON.stringify(before)); // not a rental's IP yet
    const put = await runIn(clone, [path.join(clone, 'dist', 'infra', 'cli.js'), 'rentals', 'put', '--id', 'me', '--ip', '127.0.0.2', '--rps', '10']);
    assert.equal(put.code, 0, put.err);
    assert.match(put.out, /^put me$/m);
    const after = await getSlotFrom('127.0.0.2', rpc);
    assert.equal(after.status, 200, JSON.stringify(after));
    assert.equal(typeof (after.body as { result?: unknown }).result, 'number', JSON.stringify(after));

    await stopsCleanly(r, 'SIGHUP');
  });
});

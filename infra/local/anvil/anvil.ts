import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import type { Readable, Writable } from 'node:stream';
import { anvilBinary } from './binary';

// One anvil node (a real EVM node from @foundry-rs/anvil) on loopback, for tests and the single-machine run.
// anvil serves HTTP JSON-RPC and WebSocket on the same port.
//
// Port: 0 by default; anvil binds it and prints "Listening on HOST:PORT", which we read back (no race between
// picking a free port and binding it). A fixed port is for bringing a node back where clients expect it.
//
// No orphans. anvil does not notice its parent dying, so it runs under a small sh wrapper holding a lifeline:
// a pipe (fd 3) whose other end only this process holds. When this process ends for any reason, SIGKILL
// included, the kernel closes our end, the wrapper's `read` returns and it SIGTERMs anvil. stop() closes the
// lifeline on purpose, waits for anvil to exit, and SIGKILLs the process group if it does not in time.

export interface AnvilOptions {
  chainId: number;
  /** Listen address; default 127.0.0.1. */
  host?: string;
  /** Default 0: anvil picks a free port and we read it from its output. */
  port?: number;
  /** Seconds between blocks; default none (a block per transaction, plus evm_mine). */
  blockTime?: number;
  /**
   * No per-request log lines from anvil (benchmarks: draining them costs this process CPU). anvil then prints
   * nothing, not even its port, so a free port is picked here first (another process could take it before
   * anvil binds; start fails then, naming the port).
   */
  quiet?: boolean;
  /** Extra anvil arguments. */
  args?: string[];
  startTimeoutMs?: number;
}

export interface Anvil {
  readonly chainId: number;
  readonly host: string;
  readonly port: number;
  /** http://host:port — for tests and the endpoints file; never log it. */
  readonly httpUrl: string;
  /** ws://host:port */
  readonly wsUrl: string;
  /** The process group of anvil and its wrapper (tests check that nothing of it is left). */
  readonly processGroup: number;
  /** Resolves when anvil has exited (stopped or died). */
  readonly exited: Promise<void>;
  stop(): Promise<void>;
}

const STOP_GRACE_MS = 5_000;
const KEEP_OUTPUT_CHARS = 4_000;
const LISTENING_RE = /Listening on ([^\s]+):(\d+)/;

// $0 is anvil, "$@" its arguments. anvil gets fd 3 closed, so only the wrapper's reader holds the lifeline.
const WRAPPER = [
  '"$0" "$@" 3<&- &',
  'pid=$!',
  '{ read -r _ <&3; kill -TERM "$pid" 2>/dev/null; } >/dev/null 2>&1 &',
  'watcher=$!',
  'wait "$pid"; code=$?',
  // Reap the watcher here: once the wrapper exits, an unreaped watcher would be left to whatever adopts orphans,
  // and where that does not reap (a container's PID 1) it stays a zombie in the group (seen in CI on Node 24).
  'kill "$watcher" 2>/dev/null',
  'wait "$watcher" 2>/dev/null',
  'exit "$code"',
].join('\n');

/** Starts anvil and resolves once it accepts JSON-RPC (eth_chainId answers with the asked chain id). */
export async function startAnvil(opts: AnvilOptions): Promise<Anvil> {
  const host = opts.host ?? '127.0.0.1';
  const quiet = opts.quiet ?? false;
  const fixedPort = opts.port ?? (quiet ? await freePort(host) : 0);
  const args = ['--chain-id', String(opts.chainId), '--host', host, '--port', String(fixedPort)];
  if (quiet) args.push('--quiet');
  if (opts.blockTime !== undefined) args.push('--block-time', String(opts.blockTime));
  args.push(...(opts.args ?? []));
  const child = spawn('sh', ['-c', WRAPPER, anvilBinary(), ...args], { stdio: ['ignore', 'pipe', 'pipe', 'pipe'], detached: true });
  const lifeline = child.stdio[3] as Writable;
  lifeline.on('error', () => undefined); // EPIPE once the wrapper is gone; nothing to do
  // Last resort for a normal process exit that skipped stop(): the lifeline closes anyway, this is quicker.
  const killOnExit = (): void => void killGroup(child, 'SIGTERM');
  process.once('exit', killOnExit);

  let output = '';
  const keep = (chunk: Buffer): void => {
    output = (output + chunk.toString('utf8')).slice(-KEEP_OUTPUT_CHARS);
  };
  // Drain both pipes always: anvil logs every request, and a full pipe would stall it.
  (child.stdout as Readable).on('data', keep);
  (child.stderr as Readable).on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => {
    process.removeListener('exit', killOnExit);
    resolve();
  }));

  let port: number;
  try {
    port = quiet ? fixedPort : await waitListening(child, () => output, exited, opts.startTimeoutMs ?? 30_000);
    await waitChainId(host, port, opts.chainId, exited, opts.startTimeoutMs ?? 30_000);
  } catch (e) {
    await stopChild(child, lifeline, exited);
    throw e;
  }
  const urlHost = host.includes(':') ? `[${host}]` : host;
  return {
    chainId: opts.chainId,
    host,
    port,
    httpUrl: `http://${urlHost}:${port}`,
    wsUrl: `ws://${urlHost}:${port}`,
    processGroup: child.pid!,
    exited,
    stop: () => stopChild(child, lifeline, exited),
  };
}

function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, host, () => {
      const a = srv.address() as net.AddressInfo;
      srv.close(() => resolve(a.port));
    });
  });
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, signal); // the wrapper and anvil (detached: their own process group)
  } catch {
    /* already gone */
  }
}

async function stopChild(child: ChildProcess, lifeline: Writable, exited: Promise<void>): Promise<void> {
  lifeline.destroy(); // the wrapper's read returns: it SIGTERMs anvil and exits with it
  const timer = setTimeout(() => killGroup(child, 'SIGKILL'), STOP_GRACE_MS);
  await exited;
  clearTimeout(timer);
  killGroup(child, 'SIGKILL'); // anything left in the group (nothing, normally)
}

function waitListening(child: ChildProcess, output: () => string, exited: Promise<void>, timeoutMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const deadline = setTimeout(() => finish(new Error(`anvil did not start listening within ${timeoutMs} ms:\n${output()}`)), timeoutMs);
    const check = (): void => {
      const m = LISTENING_RE.exec(output());
      if (m !== null) finish(Number(m[2]));
    };
    const finish = (r: number | Error): void => {
      clearTimeout(deadline);
      child.stdout?.removeListener('data', check);
      if (typeof r === 'number') resolve(r);
      else reject(r);
    };
    child.stdout?.on('data', check);
    void exited.then(() => finish(new Error(`anvil exited before it listened (code ${child.exitCode}):\n${output()}`)));
  });
}

async function waitChainId(host: string, port: number, chainId: number, exited: Promise<void>, timeoutMs: number): Promise<void> {
  const urlHost = host.includes(':') ? `[${host}]` : host;
  const deadline = Date.now() + timeoutMs;
  let dead = false;
  void exited.then(() => (dead = true));
  let last = '';
  while (Date.now() < deadline && !dead) {
    try {
      const res = await fetch(`http://${urlHost}:${port}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}',
      });
      const body = (await res.json()) as { result?: string };
      if (body.result !== undefined && Number(body.result) === chainId) return;
      last = `eth_chainId answered ${JSON.stringify(body).slice(0, 200)}`;
    } catch (e) {
      last = (e as Error).message;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(dead ? 'anvil exited while starting' : `anvil did not answer eth_chainId ${chainId} within ${timeoutMs} ms (${last})`);
}

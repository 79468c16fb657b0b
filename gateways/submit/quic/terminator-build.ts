import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ComponentUnavailable } from '../../../infra/base/unavailable';

// The QUIC terminator is a small Rust program (terminator/, quinn + rustls from crates.io). It is built with
// cargo on first use and cached under `$MERIDIAN_CACHE/quic-terminator` (else `<project>/.cache/…`, git-ignored),
// like the Kafka jars: `npm start` and `npm test` call ensureTerminator(), so a fresh machine needs only the
// Rust toolchain (cargo). Later calls run `cargo build` again, which is a fingerprint check (well under a
// second) unless the sources changed. `--locked`: the committed Cargo.lock is the dependency set.

const PROGRESS_EVERY_MS = 15_000;

export const TERMINATOR_BIN = 'meridian-quic-terminator';
/** The test/bench client (drives the published SDK `falcon-client`); built only when asked for. */
export const PROBE_BIN = 'meridian-quic-probe';

function projectRoot(): string {
  // The nearest folder up from here whose package.json is named meridian (works from dist/ too).
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    const pj = path.join(dir, 'package.json');
    if (fs.existsSync(pj) && (JSON.parse(fs.readFileSync(pj, 'utf8')) as { name?: string }).name === 'meridian') return dir;
    if (path.dirname(dir) === dir) return process.cwd();
  }
}

export function terminatorSourceDir(): string {
  return path.join(projectRoot(), 'gateways', 'submit', 'quic', 'terminator');
}

export function terminatorTargetDir(): string {
  const root = process.env.MERIDIAN_CACHE ?? path.join(projectRoot(), '.cache');
  return path.join(root, 'quic-terminator', 'target');
}

function binaryPath(name: string): string {
  return path.join(terminatorTargetDir(), 'release', name);
}

/** How to run the service without the QUIC transport: its switch, and what still serves submissions. */
export const WITHOUT_QUIC = 'set MERIDIAN__GATEWAYS__SUBMIT__QUIC__ENABLED=false (gateways.submit.quic.enabled); submissions still arrive over HTTP and UDP';

function cargoMissing(): ComponentUnavailable {
  return new ComponentUnavailable('gateways.submit.quic', "the QUIC terminator is built with Rust's cargo (>= 1.85), which is not on PATH", WITHOUT_QUIC);
}

function onPath(cmd: string): boolean {
  return (process.env.PATH ?? '').split(path.delimiter).some((d) => d !== '' && fs.existsSync(path.join(d, process.platform === 'win32' ? `${cmd}.exe` : cmd)));
}

function runCargo(packages: string[], progress: (line: string) => void, what: string): Promise<void> {
  const args = ['build', '--release', '--locked', '--manifest-path', path.join(terminatorSourceDir(), 'Cargo.toml'), ...packages.flatMap((p) => ['-p', p])];
  return new Promise((resolve, reject) => {
    const child = spawn('cargo', args, {
      env: { ...process.env, CARGO_TARGET_DIR: terminatorTargetDir(), CARGO_TERM_COLOR: 'never' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    // A service stopped while it builds (a signal during start) leaves no cargo behind.
    const killOnExit = (): void => void child.kill('SIGTERM');
    process.once('exit', killOnExit);
    child.once('exit', () => process.removeListener('exit', killOnExit));
    let tail = '';
    let current = '';
    let compiled = 0;
    const onData = (b: Buffer): void => {
      const text = b.toString('utf8');
      tail = (tail + text).slice(-8_000);
      for (const m of text.matchAll(/Compiling (\S+ v\S+)/g)) {
        compiled++;
        current = m[1]!;
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    const started = Date.now();
    const timer = setInterval(() => {
      if (compiled > 0) progress(`still building ${what} (${Math.round((Date.now() - started) / 1000)} s, ${compiled} crates, now ${current})`);
    }, PROGRESS_EVERY_MS);
    child.once('error', (e: NodeJS.ErrnoException) => {
      clearInterval(timer);
      reject(e.code === 'ENOENT' ? cargoMissing() : new Error(`cannot run cargo (is the Rust toolchain installed?): ${e.message}`));
    });
    child.once('close', (code) => {
      clearInterval(timer);
      if (code === 0) resolve();
      else reject(new Error(`cargo build of ${what} exited with ${code}:\n${tail.trim()}`));
    });
  });
}

const building = new Map<string, Promise<string>>();

/**
 * The path of a built binary of the terminator workspace (TERMINATOR_BIN or PROBE_BIN), building it if needed.
 * Once per process and binary; concurrent processes serialise on cargo's own lock of the target folder.
 */
export function ensureTerminatorBinary(name: string = TERMINATOR_BIN, progress?: (line: string) => void): Promise<string> {
  let p = building.get(name);
  if (p === undefined) {
    const say = progress ?? ((line: string) => process.stderr.write(`[quic terminator] ${line}\n`));
    p = (async () => {
      const bin = binaryPath(name);
      const fresh = !fs.existsSync(bin);
      const rel = path.relative(process.cwd(), terminatorTargetDir());
      // Without cargo a binary built before is used as it is (it cannot be checked against the sources).
      if (!fresh && !onPath('cargo')) return bin;
      if (fresh && !onPath('cargo')) throw cargoMissing();
      if (fresh) say(`building ${name} with cargo into ${rel.startsWith('..') ? terminatorTargetDir() : rel} (first run only; a few minutes)`);
      const started = Date.now();
      await runCargo([name], say, name === PROBE_BIN ? `the QUIC test client (${name})` : 'the QUIC terminator');
      if (!fs.existsSync(bin)) throw new Error(`cargo finished but ${bin} is missing`);
      if (fresh) say(`${name} ready after ${Math.round((Date.now() - started) / 1000)} s`);
      return bin;
    })();
    p.catch(() => building.delete(name));
    building.set(name, p);
  }
  return p;
}

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ComponentUnavailable } from '../../infra/base/unavailable';

// The Rust parts of submission (the QUIC terminator, the TPU sender) are built with cargo on first use and
// cached under `$MERIDIAN_CACHE/<cache>` (else the user's cache folder: workspaceTargetDir), like the Kafka jars: a fresh
// machine needs only the Rust toolchain. Later calls run `cargo build` again, which is a fingerprint check (well
// under a second) unless the sources changed. `--locked`: the committed Cargo.lock is the dependency set.

const PROGRESS_EVERY_MS = 15_000;

/** One cargo workspace of the project and where its build is cached. */
export interface CargoWorkspace {
  /** Config section that needs it, for the "cannot run here" line ('gateways.submit.quic'). */
  component: string;
  /** How to run without it (the setting to change, what still works). */
  without: string;
  /** Workspace folder relative to the project root. */
  source: string[];
  /** Cache folder name under $MERIDIAN_CACHE (or .cache). */
  cache: string;
  /** Oldest cargo that builds it. */
  minCargo: string;
  /** Log prefix: `[quic terminator]`. */
  label: string;
  /** What it is, for the "cannot run here" line: `the QUIC terminator`. */
  name: string;
  /**
   * Build every member at once (`--workspace`), whichever binary is asked for: cargo unifies features over the
   * packages of one build, so building members one at a time compiles the shared dependencies once per feature
   * set (the Agave crates: minutes each).
   */
  wholeWorkspace?: boolean;
}

export function projectRoot(): string {
  // The nearest folder up from here whose package.json is named meridian (works from dist/ too).
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    const pj = path.join(dir, 'package.json');
    if (fs.existsSync(pj) && (JSON.parse(fs.readFileSync(pj, 'utf8')) as { name?: string }).name === 'meridian') return dir;
    if (path.dirname(dir) === dir) return process.cwd();
  }
}

export function workspaceDir(w: CargoWorkspace): string {
  return path.join(projectRoot(), ...w.source);
}

/**
 * Where cargo builds: `$MERIDIAN_CACHE/<cache>/target` when set, else under the user's cache folder
 * (`$XDG_CACHE_HOME/meridian`, else `~/.cache/meridian`), outside the work tree, so a fresh clone (CI's, a second
 * checkout) reuses the compiled dependencies instead of building the Agave crates again (tens of minutes on 2
 * cores); cargo's own lock on the folder serialises two builds. The project's own members are rebuilt per clone
 * (their paths differ), which takes seconds.
 */
export function workspaceTargetDir(w: CargoWorkspace): string {
  const root = process.env.MERIDIAN_CACHE ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'meridian');
  return path.join(root, w.cache, 'target');
}

function cargoMissing(w: CargoWorkspace): ComponentUnavailable {
  return new ComponentUnavailable(w.component, `${w.name} is built with Rust's cargo (>= ${w.minCargo}), which is not on PATH`, w.without);
}

function onPath(cmd: string): boolean {
  return (process.env.PATH ?? '').split(path.delimiter).some((d) => d !== '' && fs.existsSync(path.join(d, process.platform === 'win32' ? `${cmd}.exe` : cmd)));
}

function runCargo(w: CargoWorkspace, packages: string[], progress: (line: string) => void, what: string): Promise<void> {
  const args = ['build', '--release', '--locked', '--manifest-path', path.join(workspaceDir(w), 'Cargo.toml'), ...(packages.length === 0 ? ['--workspace'] : packages.flatMap((p) => ['-p', p]))];
  return new Promise((resolve, reject) => {
    const child = spawn('cargo', args, {
      env: { ...process.env, CARGO_TARGET_DIR: workspaceTargetDir(w), CARGO_TERM_COLOR: 'never' },
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
      reject(e.code === 'ENOENT' ? cargoMissing(w) : new Error(`cannot run cargo (is the Rust toolchain installed?): ${e.message}`));
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
 * The path of a built binary of the workspace, building it if needed. Once per process and binary; concurrent
 * processes serialise on cargo's own lock of the target folder.
 */
export function ensureCargoBinary(w: CargoWorkspace, name: string, what: string, expect: string, progress?: (line: string) => void): Promise<string> {
  const key = `${w.cache}/${name}`;
  let p = building.get(key);
  if (p === undefined) {
    const say = progress ?? ((line: string) => process.stderr.write(`${w.label} ${line}\n`));
    p = (async () => {
      const bin = path.join(workspaceTargetDir(w), 'release', name);
      const fresh = !fs.existsSync(bin);
      const rel = path.relative(process.cwd(), workspaceTargetDir(w));
      // Without cargo a binary built before is used as it is (it cannot be checked against the sources).
      if (!fresh && !onPath('cargo')) return bin;
      if (fresh && !onPath('cargo')) throw cargoMissing(w);
      if (fresh) say(`building ${name} with cargo into ${rel.startsWith('..') ? workspaceTargetDir(w) : rel} (first run only; ${expect})`);
      const started = Date.now();
      await runCargo(w, w.wholeWorkspace === true ? [] : [name], say, what);
      if (!fs.existsSync(bin)) throw new Error(`cargo finished but ${bin} is missing`);
      if (fresh) say(`${name} ready after ${Math.round((Date.now() - started) / 1000)} s`);
      return bin;
    })();
    p.catch(() => building.delete(key));
    building.set(key, p);
  }
  return p;
}

import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { cachedGoBinary } from '../support/go-binary';
import { projectRoot } from '../support/paths';

// The compiled load client (test/bench/loadclient, Go) is built with `go build` on first use into
// `$MERIDIAN_CACHE/fanout-loadclient` (else `<project>/.cache/…`, git-ignored), as the QUIC terminator is built
// with cargo. A hash of the sources (go.mod, go.sum, *.go) and of `go version` sits beside the binary: when it
// matches, nothing is rebuilt (no `go` process at all). Dependencies come from the module proxy the first time
// (cached in the Go module cache); go.sum pins them.

export const LOAD_CLIENT_BIN = 'fanout-loadclient';

export function loadClientSourceDir(): string {
  return path.join(projectRoot(), 'test', 'bench', 'loadclient');
}

export function loadClientCacheDir(): string {
  return path.join(process.env.MERIDIAN_CACHE ?? path.join(projectRoot(), '.cache'), 'fanout-loadclient');
}

let goVersion: string | null | undefined;

/** `go version`, or null when no Go toolchain is on PATH. */
export function goToolchain(): string | null {
  if (goVersion === undefined) {
    const r = spawnSync('go', ['version'], { encoding: 'utf8', timeout: 10_000 });
    goVersion = r.status === 0 ? r.stdout.trim() : null;
  }
  return goVersion;
}

function sourceHash(version: string): string {
  const dir = loadClientSourceDir();
  const h = crypto.createHash('sha256').update(version);
  for (const f of fs.readdirSync(dir).filter((n) => n === 'go.mod' || n === 'go.sum' || n.endsWith('.go')).sort()) {
    h.update(`\0${f}\0`).update(fs.readFileSync(path.join(dir, f)));
  }
  return h.digest('hex');
}

function goBuild(out: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('go', ['build', '-trimpath', '-o', out, '.'], { cwd: loadClientSourceDir(), stdio: ['ignore', 'pipe', 'pipe'] });
    let tail = '';
    const onData = (b: Buffer): void => {
      tail = (tail + b.toString('utf8')).slice(-8_000);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('error', (e) => reject(new Error(`cannot run go: ${e.message}`)));
    child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`go build of the load client exited with ${code}:\n${tail.trim()}`))));
  });
}

let building: Promise<string> | undefined;

/** The path of the built load client, building it when its sources (or the toolchain) changed. Once per process. */
export function ensureGoLoadClient(): Promise<string> {
  if (building === undefined) {
    building = (async () => {
      const version = goToolchain();
      if (version === null) throw new Error('no Go toolchain on PATH (go version failed)');
      return cachedGoBinary(loadClientCacheDir(), LOAD_CLIENT_BIN, sourceHash(version), goBuild);
    })();
    building.catch(() => (building = undefined));
  }
  return building;
}

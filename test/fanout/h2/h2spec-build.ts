import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../support/paths';
import { cachedGoBinary } from '../../support/go-binary';
import { goToolchain } from '../go-load-client-build';

// h2spec (github.com/summerwind/h2spec, the HTTP/2 conformance suite), built with `go build` on first use into
// `$MERIDIAN_CACHE/h2spec` (else `<project>/.cache/…`, git-ignored), as the load client is built
// (go-load-client-build.ts). The version is pinned by test/fanout/h2spec/go.mod (h2spec v2.2.1+incompatible, the
// last tag, whose code is the current master's) and its dependencies by go.sum; the module proxy serves them the
// first time. A hash of those files and of `go version` sits beside the binary: when it matches, no `go` runs.

const BIN = 'h2spec';

function sourceDir(): string {
  return path.join(projectRoot(), 'test', 'fanout', 'h2spec');
}

function cacheDir(): string {
  return path.join(process.env.MERIDIAN_CACHE ?? path.join(projectRoot(), '.cache'), 'h2spec');
}

function sourceHash(version: string): string {
  const dir = sourceDir();
  const h = crypto.createHash('sha256').update(version);
  for (const f of fs.readdirSync(dir).filter((n) => n === 'go.mod' || n === 'go.sum' || n.endsWith('.go')).sort()) {
    h.update(`\0${f}\0`).update(fs.readFileSync(path.join(dir, f)));
  }
  return h.digest('hex');
}

function goBuild(out: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('go', ['build', '-trimpath', '-o', out, 'github.com/summerwind/h2spec/cmd/h2spec'], {
      cwd: sourceDir(),
      // -mod=mod: go.sum is checked, and a missing module is fetched from the proxy instead of failing.
      env: { ...process.env, GOFLAGS: '-mod=mod' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let tail = '';
    const onData = (b: Buffer): void => {
      tail = (tail + b.toString('utf8')).slice(-8_000);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('error', (e) => reject(new Error(`cannot run go: ${e.message}`)));
    child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`go build of h2spec exited with ${code}:\n${tail.trim()}`))));
  });
}

let building: Promise<string> | undefined;

/** The path of the built h2spec, building it when its pins (or the toolchain) changed. Once per process. */
export function ensureH2spec(): Promise<string> {
  if (building === undefined) {
    building = (async () => {
      const version = goToolchain();
      if (version === null) throw new Error('no Go toolchain on PATH (go version failed)');
      return cachedGoBinary(cacheDir(), BIN, sourceHash(version), goBuild);
    })();
    building.catch(() => (building = undefined));
  }
  return building;
}

export { goToolchain };

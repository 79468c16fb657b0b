import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../support/paths';

// The committed lock is one `npm ci` accepts on any platform. npm ci refuses a lock that lacks an optional
// dependency some locked package declares ("Missing: litesvm-darwin-arm64@ from lock file"), and npm 11.16+
// leaves out of the lock the optional packages that were never published (npm/cli#9846): a package that lists
// platform builds it never released makes a lock npm ci rejects. This checks the lock offline; .ci/run proves the
// same against the registry (npm ci on a clean checkout, then `npm install --package-lock-only` changes nothing).

interface LockEntry {
  version?: string;
  optionalDependencies?: Record<string, string>;
  dependencies?: Record<string, string>;
  engines?: { node?: string };
}
interface Lock {
  lockfileVersion: number;
  packages: Record<string, LockEntry>;
}

const ROOT = projectRoot();
const lock = JSON.parse(fs.readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as Lock;
const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { engines?: { node?: string } } & Record<string, unknown>;

/** Where node would find `name` from the package at `from` (its own node_modules, then each parent's). */
function resolveIn(l: Lock, from: string, name: string): string | undefined {
  let dir = from;
  for (;;) {
    const at = `${dir === '' ? '' : `${dir}/`}node_modules/${name}`;
    if (l.packages[at] !== undefined) return at;
    if (dir === '') return undefined;
    const i = dir.lastIndexOf('/node_modules/');
    dir = i === -1 ? '' : dir.slice(0, i);
  }
}

/** Every optional dependency a locked package declares that the lock does not hold. */
export function missingOptional(l: Lock): string[] {
  const missing: string[] = [];
  for (const [at, e] of Object.entries(l.packages)) {
    for (const name of Object.keys(e.optionalDependencies ?? {})) {
      if (resolveIn(l, at, name) === undefined) missing.push(`${name} (optional dependency of ${at === '' ? 'the project' : at.replace(/^.*node_modules\//, '')}@${e.version ?? ''})`);
    }
  }
  return missing.sort();
}

describe('package-lock.json: what npm ci needs on every platform', () => {
  it('is lockfile version 3 and names the project', () => {
    assert.equal(lock.lockfileVersion, 3);
    assert.ok(lock.packages[''] !== undefined);
  });

  it('holds every optional (platform) package each locked package declares', () => {
    assert.deepEqual(missingOptional(lock), []);
    // The three with a native build per platform: all their platforms are in.
    for (const [pkg, prefix, n] of [['litesvm', 'litesvm-', 6], ['@foundry-rs/anvil', '@foundry-rs/anvil-', 5], ['@matrixai/quic', '@matrixai/quic-', 5]] as const) {
      const opt = Object.keys(lock.packages[`node_modules/${pkg}`]?.optionalDependencies ?? {}).filter((k) => k.startsWith(prefix));
      assert.equal(opt.length, n, `${pkg}: ${opt.join(', ')}`);
    }
  });

  it('finds what the lock before this fix lacked (main at 854a4d1: litesvm 1.5.0, @matrixai/quic 2.0.9)', () => {
    // The shape of that lock's litesvm entries as npm 11.19 wrote them (run on the real file, this check lists
    // exactly the nine packages `npm ci` named: five of litesvm, four of @matrixai/quic).
    const before: Lock = {
      lockfileVersion: 3,
      packages: {
        '': {},
        'node_modules/litesvm': { version: '1.5.0', optionalDependencies: { 'litesvm-darwin-x64': '1.5.0', 'litesvm-linux-x64-gnu': '1.5.0', 'litesvm-linux-x64-musl': '1.5.0', 'litesvm-darwin-arm64': '1.5.0', 'litesvm-linux-arm64-gnu': '1.5.0', 'litesvm-linux-arm64-musl': '1.5.0' } },
        'node_modules/litesvm-linux-x64-gnu': { version: '1.5.0' },
      },
    };
    assert.equal(missingOptional(before).length, 5);
  });

  it('fails a lock that lacks a declared platform package (a deliberately bad example)', () => {
    const bad: Lock = {
      lockfileVersion: 3,
      packages: {
        '': {},
        'node_modules/native': { version: '1.5.0', optionalDependencies: { 'native-linux-x64': '1.5.0', 'native-darwin-arm64': '1.5.0' } },
        'node_modules/native-linux-x64': { version: '1.5.0' },
        'node_modules/a/node_modules/inner': { version: '1.0.0', optionalDependencies: { 'native-linux-x64': '1.5.0' } },
      },
    };
    assert.deepEqual(missingOptional(bad), ['native-darwin-arm64 (optional dependency of native@1.5.0)']);
  });

  it('the project root entry matches package.json (engines): the lock was written from this manifest', () => {
    assert.deepEqual(lock.packages['']!.engines, manifest.engines);
  });

  it('engines: the maintained Node LTS lines (22, 24) and 20.19+ (what the dependencies need); this Node is one of them', () => {
    assert.equal(manifest.engines?.node, '^20.19.0 || ^22.12.0 || >=24.0.0');
    const [maj, min] = process.versions.node.split('.').map(Number) as [number, number];
    assert.ok((maj === 20 && min >= 19) || (maj === 22 && min >= 12) || maj >= 24, process.version);
  });
});

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import ts from 'typescript';
import { projectRoot } from '../support/paths';
import { sourceFiles, specifiersOf } from './import-graph';

// package.json says what the code imports: every package production code imports is a dependency (a production
// install has it), every package only tests and scripts import is a devDependency (a production install does
// not carry it), and nothing is listed that no code imports, but for the few tools below that are used another
// way. Import specifiers are read from each file's syntax tree (import-graph.ts), so comments and strings never count.

const ROOT = projectRoot();
/** What `npm install --omit=dev` must be able to run. */
const PRODUCTION = ['bus', 'proto', 'ingest', 'fanout', 'gateways', 'infra'];
/** Only run from a checkout: the tests and the build/generation scripts. */
const DEV = ['test', 'infra/scripts'];
const SKIP_DIRS = new Set(['node_modules', 'dist', '.git', '.cache', 'fixtures', 'target']);
const CODE = /\.(ts|mts|cts|js|mjs|cjs)$/;

interface Manifest {
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  scripts?: Record<string, string>;
}

/**
 * Listed packages that no import names, with what uses them instead; each `holds` checks that use is still there,
 * so a reason that went stale fails like any other unused package. All are build or dev tools: devDependencies.
 */
const USED_WITHOUT_IMPORT: Record<string, { why: string; holds: (m: Manifest) => boolean }> = {
  // The dev runs load TypeScript sources through it: `npm run test:dev` (mocha -r ts-node/register/...), and
  // tests running from source fork children with the same -r flag (a string, not an import).
  'ts-node': { why: 'registered with -r by npm run test:dev', holds: (m) => Object.values(m.scripts ?? {}).some((s) => s.includes('ts-node/register')) },
  // `npm run proto` (infra/scripts/gen-proto.sh) runs its protoc-gen-ts plugin to write proto/gen/*.d.ts.
  'ts-protoc-gen': { why: "gen-proto.sh runs its protoc-gen-ts plugin", holds: () => fs.readFileSync(path.join(ROOT, 'infra/scripts/gen-proto.sh'), 'utf8').includes('.bin/protoc-gen-ts') },
};

/** @types/X is needed while X is listed or is one of tsconfig's `types` (node, mocha): the compiler reads it, no code imports it. */
function typesNeeded(name: string, m: Manifest, tsconfigTypes: readonly string[]): boolean {
  const x = name.slice('@types/'.length);
  return tsconfigTypes.includes(x) || x in (m.dependencies ?? {}) || x in (m.devDependencies ?? {});
}

const BUILTIN = new Set(builtinModules);

/** The package a bare specifier names ('@a/b/c' → '@a/b', 'x/y' → 'x'), or null for a relative path or a built-in. */
export function packageOf(spec: string): string | null {
  if (spec.startsWith('.') || spec.startsWith('/') || spec.startsWith('node:')) return null;
  const parts = spec.split('/');
  const name = spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
  return BUILTIN.has(name) ? null : name;
}

export type Use = 'production' | 'dev';

/** Package → where it is imported from (production wins: a package both use is production's). */
export function importedPackages(): Map<string, { use: Use; example: string }> {
  const found = new Map<string, { use: Use; example: string }>();
  const scan = (dirs: string[], use: Use, skip: string[]): void => {
    for (const dir of dirs) {
      for (const file of sourceFiles(ROOT, dir, CODE, SKIP_DIRS, skip)) {
        for (const spec of specifiersOf(file, fs.readFileSync(path.join(ROOT, file), 'utf8'))) {
          const pkg = packageOf(spec);
          if (pkg === null || found.get(pkg)?.use === 'production') continue;
          found.set(pkg, { use, example: file });
        }
      }
    }
  };
  scan(PRODUCTION, 'production', DEV);
  scan(DEV, 'dev', []);
  return found;
}

/** What is wrong between a manifest and the imports found; empty when they match. */
export function dependencyProblems(m: Manifest, imported: ReadonlyMap<string, { use: Use; example: string }>, tsconfigTypes: readonly string[]): string[] {
  const deps = m.dependencies ?? {};
  const dev = m.devDependencies ?? {};
  const problems: string[] = [];
  for (const [pkg, { use, example }] of [...imported].sort(([a], [b]) => a.localeCompare(b))) {
    if (use === 'production' && !(pkg in deps)) problems.push(`${pkg}: imported by production code (${example}) but ${pkg in dev ? 'only a devDependency' : 'not listed'}`);
    if (use === 'dev' && !(pkg in dev)) problems.push(`${pkg}: imported only by tests/scripts (${example}) but ${pkg in deps ? 'a dependency' : 'not listed'}`);
    if (pkg in deps && pkg in dev) problems.push(`${pkg}: listed as both a dependency and a devDependency`);
  }
  for (const pkg of Object.keys({ ...deps, ...dev }).sort()) {
    if (imported.has(pkg)) continue;
    const exception = USED_WITHOUT_IMPORT[pkg];
    const known = pkg.startsWith('@types/') ? typesNeeded(pkg, m, tsconfigTypes) : exception !== undefined && exception.holds(m);
    if (!known) problems.push(`${pkg}: listed but imported nowhere`);
    else if (pkg in deps) problems.push(`${pkg}: a build/dev tool (${pkg.startsWith('@types/') ? 'type declarations' : exception!.why}) listed as a dependency`);
  }
  return problems;
}

describe('package.json matches the imports', () => {
  const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as Manifest;
  const tsconfig = ts.readConfigFile(path.join(ROOT, 'tsconfig.json'), ts.sys.readFile).config as { compilerOptions?: { types?: string[] } };
  const types = tsconfig.compilerOptions?.types ?? [];

  it('production imports are dependencies, test/script imports devDependencies, and nothing listed is unused', () => {
    const imported = importedPackages();
    assert.ok(imported.get('kafkajs')?.use === 'production' && imported.get('fast-check')?.use === 'dev', 'the scan finds imports');
    assert.deepEqual(dependencyProblems(manifest, imported, types), []);
  });

  it('reads specifiers from syntax, not text: comments and strings do not count', () => {
    const text = [
      "import a from 'pkg-a';",
      "import type { B } from '@scope/b/sub';",
      "export { c } from 'pkg-c';",
      "import d = require('pkg-d');",
      "const e = require('pkg-e/x'), f = require.resolve('pkg-f/package.json');",
      "const g = await import('pkg-g'); const h = await esmImport('pkg-h');",
      "type I = import('pkg-i').I;",
      "import fs from 'node:fs'; import path from 'path'; import here from './here';",
      "// import nope from 'in-a-comment'",
      "call.on('error', () => {}); // reported from 'status'",
      "const s = \"from 'in-a-string'\"; log(`require('in-a-template')`);",
    ].join('\n');
    const pkgs = specifiersOf('x.ts', text).map(packageOf).filter((p) => p !== null);
    assert.deepEqual(pkgs, ['pkg-a', '@scope/b', 'pkg-c', 'pkg-d', 'pkg-e', 'pkg-f', 'pkg-g', 'pkg-h', 'pkg-i']);
  });

  it('fails a manifest that does not match (a deliberately bad example)', () => {
    const bad: Manifest = {
      dependencies: { prod: '1', 'test-only': '1', '@types/prod': '1', 'ts-node': '1', both: '1' },
      devDependencies: { 'prod-in-dev': '1', unused: '1', '@types/gone': '1', both: '1' },
      scripts: { dev: 'mocha -r ts-node/register/transpile-only' },
    };
    const imported = new Map<string, { use: Use; example: string }>([
      ['prod', { use: 'production', example: 'gateways/a.ts' }],
      ['prod-in-dev', { use: 'production', example: 'infra/b.ts' }],
      ['unlisted', { use: 'production', example: 'bus/c.ts' }],
      ['test-only', { use: 'dev', example: 'test/d.test.ts' }],
      ['both', { use: 'production', example: 'ingest/e.ts' }],
    ]);
    assert.deepEqual(dependencyProblems(bad, imported, ['node']), [
      'both: listed as both a dependency and a devDependency',
      'prod-in-dev: imported by production code (infra/b.ts) but only a devDependency',
      'test-only: imported only by tests/scripts (test/d.test.ts) but a dependency',
      'unlisted: imported by production code (bus/c.ts) but not listed',
      '@types/gone: listed but imported nowhere',
      '@types/prod: a build/dev tool (type declarations) listed as a dependency',
      'ts-node: a build/dev tool (registered with -r by npm run test:dev) listed as a dependency',
      'unused: listed but imported nowhere',
    ]);
    // The same manifest, put right, passes.
    const good: Manifest = {
      dependencies: { prod: '1', 'prod-in-dev': '1', unlisted: '1', both: '1' },
      devDependencies: { 'test-only': '1', '@types/prod': '1', 'ts-node': '1' },
      scripts: bad.scripts!,
    };
    assert.deepEqual(dependencyProblems(good, imported, ['node']), []);
  });
});

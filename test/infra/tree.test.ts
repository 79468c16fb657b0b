import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { FIXTURES, cliCommand, fixture, projectRoot } from '../support/paths';
import { circles, importGraph, layerViolations, specifiers } from './import-graph';

// The project stands alone: a clone with nothing beside it builds and passes its tests. So no source, test or
// script may resolve a path outside the project's tree (a sibling folder next to the checkout, an absolute path of
// some machine), and the test data lives under test/fixtures. This scans every text file we ship.

const ROOT = projectRoot();
/** Not ours (node_modules), built or fetched (dist, .cache), or data (fixtures). */
const SKIP_DIRS = new Set(['node_modules', 'dist', '.git', '.cache', 'fixtures']);
const TEXT = /\.(ts|js|cjs|mjs|json|sh|ya?ml)$/;
/** Extensionless scripts. */
const SCRIPTS = new Set(['.ci/run']);

export interface Escape {
  file: string;
  line: number;
  text: string;
  why: string;
}

function inside(p: string): boolean {
  const rel = path.relative(ROOT, p);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/** Where a TypeScript file runs from once compiled (dist/ mirrors the source tree). */
function runDirs(file: string): string[] {
  const dir = path.dirname(path.join(ROOT, file));
  return file.endsWith('.ts') ? [dir, path.join(ROOT, 'dist', path.dirname(file))] : [dir];
}

// require.resolve() resolves like require(): against the calling module's folder, not the working folder.
const IMPORT = /(?:\bfrom\s+|\bimport\s*\(\s*|\brequire(?:\.resolve)?\s*\(\s*)(['"])([^'"\n]+)\1/g;
const JOIN = /\bpath\.(?:join|resolve)\(([^()]*(?:\([^()]*\)[^()]*)*)\)/g;
const UP_LITERAL = /(['"`])((?:\.\.\/)+[^'"`\n]*)\1/g;
const SHELL_UP = /(?:^|[\s=:])((?:\.\.\/)+[\w.\-/]*)/g;
const ABSOLUTE_WORK = /(['"`\s=:])(\/work\/[^'"`\s]*)/g;

/** Paths in one file's text that leave the project tree, with the reason. Exported for its own test. */
export function escapingPaths(file: string, text: string): Escape[] {
  const out: Escape[] = [];
  const lines = text.split('\n');
  const add = (idx: number, why: string): void => {
    const line = text.slice(0, idx).split('\n').length;
    out.push({ file, line, text: lines[line - 1]!.trim(), why });
  };
  const importSpans = new Set<number>();
  const isCode = /\.(ts|js|cjs|mjs)$/.test(file);
  if (isCode) {
    // Whole-line comments talk about paths, they do not resolve them (blanked, so offsets and lines stay).
    text = text.replace(/^[ \t]*(\/\/|\/?\*)[^\n]*/gm, (c) => ' '.repeat(c.length));
    // Module specifiers resolve against the file's own folder (and its dist/ twin).
    for (const m of text.matchAll(IMPORT)) {
      const spec = m[2]!;
      importSpans.add(m.index! + m[0].indexOf(spec));
      if (!spec.startsWith('.')) continue;
      for (const dir of runDirs(file)) {
        if (!inside(path.resolve(dir, spec))) {
          add(m.index!, `imports ${spec} from outside the project`);
          break;
        }
      }
    }
    // path.join/resolve(__dirname | root, '..', ...): resolve the literal parts from where the code runs.
    for (const m of text.matchAll(JOIN)) {
      const args = m[1]!.split(',').map((a) => a.trim());
      const literal = (a: string): string | null => (/^(['"`])[^'"`]*\1$/.test(a) ? a.slice(1, -1) : null);
      const parts = args.slice(1).map(literal);
      if (!parts.some((p) => p !== null && p.split('/').includes('..'))) continue;
      const bases = args[0] === '__dirname' ? runDirs(file) : literal(args[0]!) !== null ? [path.resolve(ROOT, literal(args[0]!)!)] : [ROOT];
      const known: string[] = [];
      for (const p of parts) {
        if (p === null) break; // a variable: what follows cannot climb back out of what is known
        known.push(p);
      }
      for (const base of bases) {
        if (!inside(path.resolve(base, ...known))) {
          add(m.index!, `${m[0]} leaves the project`);
          break;
        }
      }
    }
    // Any other ../ string is a path used at run time, relative to the working folder (the project root).
    for (const m of text.matchAll(UP_LITERAL)) {
      if (importSpans.has(m.index! + 1)) continue;
      if (!inside(path.resolve(ROOT, m[2]!))) add(m.index!, `"${m[2]}" is relative to the working folder and leaves the project`);
    }
  } else {
    // Scripts and JSON (package.json scripts, CI): words that climb out of the folder they run in.
    for (const m of text.matchAll(SHELL_UP)) {
      const base = file === 'package.json' || file.startsWith('.ci/') ? ROOT : path.dirname(path.join(ROOT, file));
      if (!inside(path.resolve(base, m[1]!))) add(m.index!, `${m[1]} leaves the project`);
    }
  }
  for (const m of text.matchAll(ABSOLUTE_WORK)) add(m.index!, `${m[2]} is an absolute path of one machine`);
  return out;
}

/** Every text file of the project (relative paths), as a clone has them. */
function projectFiles(dir = ROOT, rel = ''): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const r = rel === '' ? e.name : `${rel}/${e.name}`;
    if (e.isDirectory()) {
      if (!SKIP_DIRS.has(e.name)) out.push(...projectFiles(path.join(dir, e.name), r));
    } else if (e.isFile() && (TEXT.test(e.name) || SCRIPTS.has(r)) && e.name !== 'package-lock.json') {
      out.push(r);
    }
  }
  return out;
}

describe('the project tree stands alone', () => {
  it('the scanner finds what it is for (it can fail)', () => {
    const found = (file: string, text: string): string[] => escapingPaths(file, text).map((e) => e.why);
    assert.equal(found('test/ingest/x.test.ts', "import { a } from '../../../elsewhere/fixtures/a';").length, 1);
    assert.equal(found('test/support/paths.ts', "const F = path.resolve(__dirname, '..', '..', '..', 'elsewhere', 'fixtures');").length, 1);
    assert.equal(found('test/support/paths.ts', "const F = path.join(projectRoot(), '..', 'elsewhere');").length, 1);
    assert.equal(found('ingest/cli/x.ts', "fs.readFileSync('../elsewhere/spec/service.md');").length, 1);
    assert.equal(found('package.json', '{"scripts": {"x": "node ../elsewhere/tool.js"}}').length, 1);
    assert.equal(found('test/e2e/x.ts', "const f = '/work/elsewhere/fixtures/a.pcap';").length, 1);
    // And lets the project's own relative paths be.
    assert.deepEqual(found('test/ingest/shred/x.test.ts', "import { a } from '../../../ingest/fec-set';\nconst r = path.resolve(__dirname, '..', '..');"), []);
    assert.deepEqual(found('infra/scripts/copy-generated.js', "const root = path.resolve(__dirname, '..', '..');"), []);
    assert.deepEqual(found('ingest/x.ts', '// not read: ../elsewhere/DESIGN.md explains it\n * see ../elsewhere/spec'), []);
    // require.resolve() resolves against the module's folder, like require().
    assert.deepEqual(found('test/fanout/x.test.ts', "const m = require.resolve('../bench/fanout-workload');"), []);
    assert.equal(found('test/fanout/x.test.ts', "const m = require.resolve('../../../elsewhere/x');").length, 1);
  });

  it('no source, test or script resolves a path outside the project', () => {
    // This file's own examples of what must not be written are the only exception.
    const files = projectFiles().filter((f) => f !== 'test/infra/tree.test.ts');
    assert.ok(files.length > 100, `scanned ${files.length} files`);
    for (const must of ['package.json', 'tsconfig.json', '.ci/run', 'test/support/paths.ts', 'infra/cli.ts', 'test/mocha.ci.json']) assert.ok(files.includes(must), must);
    const escapes = files.flatMap((f) => escapingPaths(f, fs.readFileSync(path.join(ROOT, f), 'utf8')));
    assert.deepEqual(escapes.map((e) => `${e.file}:${e.line}: ${e.why}\n    ${e.text}`), []);
  });

  it('test/support/paths.ts resolves the root, the fixtures and the CLI inside the project', function () {
    assert.equal((JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { name: string }).name, 'meridian');
    if (process.env.MERIDIAN_FIXTURES === undefined) assert.equal(FIXTURES, path.join(ROOT, 'test', 'fixtures'));
    assert.ok(inside(fixture('shreds', 'demo-shreds.pcap')));
    const cli = cliCommand();
    assert.ok(cli.args.some((a) => inside(a) && /infra[/\\]cli\.(js|ts)$/.test(a)), cli.args.join(' '));
    assert.ok(fs.existsSync(path.join(ROOT, 'test', 'fixtures', 'README.md')), 'fixtures carry their origin and licence');
    assert.match(fs.readFileSync(path.join(ROOT, 'test', 'fixtures', 'README.md'), 'utf8'), /Apache/);
  });

  it('every fixture a test names is in test/fixtures', () => {
    const named = new Set<string>();
    for (const f of projectFiles().filter((x) => x.startsWith('test/') && x.endsWith('.ts'))) {
      for (const m of fs.readFileSync(path.join(ROOT, f), 'utf8').matchAll(/\bfixture\(((?:\s*'[^']+'\s*,?)+)\)/g)) {
        named.add([...m[1]!.matchAll(/'([^']+)'/g)].map((x) => x[1]!).join('/'));
      }
    }
    assert.ok(named.size >= 3, [...named].join(', '));
    for (const n of named) assert.ok(fs.existsSync(path.join(ROOT, 'test', 'fixtures', n)), `test/fixtures/${n}`);
  });
});

describe('the import graph keeps its layers (README, "Layout")', () => {
  const PRODUCTION = ['bus', 'proto', 'ingest', 'fanout', 'gateways', 'infra'];

  it('the checker finds what it is for (it can fail)', () => {
    // A component reaching up into the composition root, and the floor reaching into a component.
    const bad = new Map<string, string[]>([
      ['bus/open.ts', ['infra/config.ts', 'infra/base/log.ts']],
      ['infra/base/metrics.ts', ['fanout/metrics.ts']],
      ['gateways/submit/pipeline.ts', ['ingest/entry/entries.ts', 'gateways/core/usage.ts', 'proto/txn/decode.ts']],
      ['gateways/rpc/gateway.ts', ['gateways/evm/auth.ts']],
      ['newfolder/x.ts', []],
      // The fanout's rooms: v1 and v2 never import each other; the filter engine knows neither nor the adapters.
      ['fanout/v2/hub.ts', ['fanout/v1/session.ts', 'fanout/filter/compile.ts', 'fanout/queue-budget.ts']],
      ['fanout/v1/hub.ts', ['fanout/v2/cursor.ts']],
      ['fanout/filter/compile.ts', ['fanout/v1/request.ts', 'fanout/transport/h2.ts', 'fanout/errors.ts']],
    ]);
    const why = layerViolations(bad).map((v) => `${v.from} -> ${v.to}`);
    assert.deepEqual(why, [
      'bus/open.ts -> infra/config.ts',
      'infra/base/metrics.ts -> fanout/metrics.ts',
      'gateways/submit/pipeline.ts -> ingest/entry/entries.ts',
      'gateways/rpc/gateway.ts -> gateways/evm/auth.ts',
      'newfolder/x.ts -> ',
      'fanout/v2/hub.ts -> fanout/v1/session.ts',
      'fanout/v1/hub.ts -> fanout/v2/cursor.ts',
      'fanout/filter/compile.ts -> fanout/v1/request.ts',
      'fanout/filter/compile.ts -> fanout/transport/h2.ts',
    ]);
    // The root and the tests may import anything.
    assert.deepEqual(layerViolations(new Map([['infra/launcher.ts', ['ingest/worker.ts', 'infra/local/chain/index.ts']], ['test/x.test.ts', ['fanout/filter/compile.ts']]])), []);
    // Circles, including a type-only one through a third file, and none in a chain.
    assert.deepEqual(circles(new Map([['a.ts', ['b.ts']], ['b.ts', ['c.ts']], ['c.ts', ['a.ts']], ['d.ts', ['a.ts']]])), [['a.ts', 'b.ts', 'c.ts']]);
    assert.deepEqual(circles(new Map([['a.ts', ['a.ts']]])), [['a.ts']]);
    assert.deepEqual(circles(new Map([['a.ts', ['b.ts']], ['b.ts', ['c.ts']], ['c.ts', []]])), []);
    // Type-only imports, re-exports and lazy imports are edges too; comments are not.
    assert.deepEqual(specifiers("import type { A } from './a';\nexport { B } from '../b';\nconst c = await import('./c');\n// from './d'\nimport './e';"), ['./a', '../b', './c', './e']);
  });

  it('no production folder imports above its layer, and the floor imports nothing of the project', () => {
    const graph = importGraph(ROOT, PRODUCTION);
    assert.ok(graph.size > 200, `scanned ${graph.size} files`);
    // The scan sees the edges it must (a checker that read nothing would pass).
    assert.ok(graph.get('bus/open.ts')?.includes('bus/config.ts'), 'bus/open.ts -> bus/config.ts');
    assert.ok(graph.get('gateways/submit/pipeline.ts')?.includes('proto/txn/decode.ts'), 'submit reads the shared transaction codec');
    assert.ok(graph.get('fanout/v2/hub.ts')?.includes('fanout/filter/filter-index.ts'), 'v2 matches with the shared filter engine');
    assert.deepEqual(layerViolations(graph).map((v) => `${v.from} -> ${v.to}: ${v.why}`), []);
  });

  it('bus/open.ts is the one production file that constructs a Bus implementation', () => {
    const graph = importGraph(ROOT, PRODUCTION);
    const constructs = [...graph.keys()].filter((f) => /\bnew (KafkaBus|EmbeddedBus)\b/.test(fs.readFileSync(path.join(ROOT, f), 'utf8')));
    assert.deepEqual(constructs, ['bus/open.ts']);
  });

  it('no import circles among production files', () => {
    const graph = importGraph(ROOT, PRODUCTION);
    assert.deepEqual(circles(graph), []);
  });
});

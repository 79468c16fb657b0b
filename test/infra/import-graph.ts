import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

// The project's import graph and the rules it must keep (README, "Layout"): which folder may import which, and no
// circles. Pure functions over { file → imported files } so the rules can be shown failing on made-up graphs.
//
//   infra/base   the floor: log, metrics, config reading, args, keypairs, addresses, listen errors, JSON-RPC client
//   proto        wire formats: the v1 proto, its hot-path encoder, the transaction codec (proto/txn)
//   bus          the Bus, its implementations, one codec per topic, rentals
//   ingest, fanout, gateways/core, gateways/{rpc,evm,submit}   the components
//   infra/local  stand-ins for the world outside (local chain, anvil, Kafka broker, demo traffic)
//   infra/ops    operations jobs (billing, the admin endpoint)
//   infra        the composition root (CLI, launcher, config, commands): may import anything
//   test         may import anything

/** A folder whose files follow one rule; a file belongs to the longest unit that contains it. */
export type Unit = string;

/** What each unit may import besides itself. A unit absent here (the root, test/) may import anything. */
export const MAY_IMPORT: Readonly<Record<Unit, readonly Unit[]>> = {
  'infra/base': [],
  proto: ['infra/base'],
  bus: ['infra/base'],
  ingest: ['infra/base', 'bus', 'proto'],
  // The fanout's rooms: what every stream shares sits at its top (server, config, metrics, errors, queues, limits,
  // usage, the lookup-table seam, the HTTP/2 server in h2/) and composes the rooms; v1 and v2 never import each
  // other; the filter engine serves both and knows neither them nor the call adapters.
  fanout: ['infra/base', 'bus', 'proto', 'fanout/v1', 'fanout/v2', 'fanout/filter', 'fanout/transport'],
  'fanout/filter': ['infra/base', 'bus', 'proto', 'fanout'],
  'fanout/v1': ['infra/base', 'bus', 'proto', 'fanout', 'fanout/filter'],
  'fanout/v2': ['infra/base', 'bus', 'proto', 'fanout', 'fanout/filter'],
  'fanout/transport': ['infra/base', 'bus', 'proto', 'fanout', 'fanout/v1', 'fanout/v2', 'fanout/filter'],
  'gateways/core': ['infra/base', 'bus', 'proto'],
  'gateways/rpc': ['infra/base', 'bus', 'proto', 'gateways/core'],
  'gateways/evm': ['infra/base', 'bus', 'proto', 'gateways/core'],
  'gateways/submit': ['infra/base', 'bus', 'proto', 'gateways/core'],
  'infra/local': ['infra/base', 'bus', 'proto', 'ingest'],
  'infra/ops': ['infra/base', 'bus'],
};

/** Units that follow no rule but still belong somewhere (so a file is never unclassified). */
const FREE_UNITS: readonly Unit[] = ['infra', 'test'];

/** The unit of a project-relative path (forward slashes), or null when it is in none (a new top-level folder). */
export function unitOf(rel: string): Unit | null {
  let best: Unit | null = null;
  for (const u of [...Object.keys(MAY_IMPORT), ...FREE_UNITS]) {
    if ((rel === u || rel.startsWith(`${u}/`)) && (best === null || u.length > best.length)) best = u;
  }
  return best;
}

/**
 * Every module specifier in one file, read from its syntax tree (comments and strings never count):
 * import/export … from, import x = require(), import type('x'), import('x'), require('x'), require.resolve('x'),
 * and a call of a function named …import/…Import with a literal (test/bench loads ESM-only packages through such a
 * wrapper around import(), which tsc would otherwise turn into require()). Type-only imports are edges too.
 */
export function specifiersOf(file: string, text: string): string[] {
  const kind = /\.[mc]?js$/.test(file) ? ts.ScriptKind.JS : ts.ScriptKind.TS;
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, kind);
  const out: string[] = [];
  const literal = (n: ts.Node | undefined): void => {
    if (n !== undefined && ts.isStringLiteralLike(n)) out.push(n.text);
  };
  const visit = (n: ts.Node): void => {
    if (ts.isImportDeclaration(n) || ts.isExportDeclaration(n)) literal(n.moduleSpecifier);
    else if (ts.isExternalModuleReference(n)) literal(n.expression);
    else if (ts.isImportTypeNode(n) && ts.isLiteralTypeNode(n.argument)) literal(n.argument.literal);
    else if (ts.isCallExpression(n)) {
      const callee = n.expression;
      const named =
        callee.kind === ts.SyntaxKind.ImportKeyword ||
        (ts.isIdentifier(callee) && (callee.text === 'require' || /import$/i.test(callee.text))) ||
        (ts.isPropertyAccessExpression(callee) && ts.isIdentifier(callee.expression) && callee.expression.text === 'require' && callee.name.text === 'resolve');
      if (named) literal(n.arguments[0]);
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return out;
}

/** The relative specifiers of a TypeScript text: the edges inside the project. */
export function specifiers(text: string): string[] {
  return specifiersOf('x.ts', text).filter((s) => /^\.\.?(\/|$)/.test(s));
}

/** Files under `dir` (project-relative paths) whose names match `file`, skipping folders named in `skipDirs` or at a path in `skipPaths`. */
export function sourceFiles(root: string, dir: string, file: RegExp, skipDirs: ReadonlySet<string>, skipPaths: readonly string[] = []): string[] {
  const out: string[] = [];
  const walk = (rel: string): void => {
    for (const e of fs.readdirSync(path.join(root, rel), { withFileTypes: true })) {
      const r = `${rel}/${e.name}`;
      if (e.isDirectory()) {
        if (!skipDirs.has(e.name) && !skipPaths.includes(r)) walk(r);
      } else if (e.isFile() && file.test(e.name)) out.push(r);
    }
  };
  walk(dir);
  return out;
}

const EXTS = ['.ts', '.d.ts', '.js', '.json', '/index.ts', '/index.js'];

/** The project-relative file a specifier in `fromRel` resolves to, or null (not in the tree). */
export function resolveSpecifier(root: string, fromRel: string, spec: string): string | null {
  const base = path.resolve(root, path.dirname(fromRel), spec);
  const cands = [base, ...EXTS.map((x) => base + x)];
  for (const c of cands) {
    if (fs.existsSync(c) && fs.statSync(c).isFile()) return path.relative(root, c).split(path.sep).join('/');
  }
  return null;
}

export type Graph = ReadonlyMap<string, readonly string[]>;

export interface Violation {
  from: string;
  to: string;
  why: string;
}

/** Imports that break MAY_IMPORT, or that leave every unit. */
export function layerViolations(graph: Graph): Violation[] {
  const out: Violation[] = [];
  for (const [from, tos] of graph) {
    const fu = unitOf(from);
    if (fu === null) {
      out.push({ from, to: '', why: `${from} is in no unit: add its folder to MAY_IMPORT (and the README's layout)` });
      continue;
    }
    const allowed = MAY_IMPORT[fu];
    if (allowed === undefined) continue;
    for (const to of tos) {
      const tu = unitOf(to);
      if (tu === fu) continue;
      if (tu === null || !allowed.includes(tu)) out.push({ from, to, why: `${fu} may not import ${tu ?? to} (allowed: ${allowed.join(', ') || 'nothing of the project'})` });
    }
  }
  return out;
}

/** Every strongly connected group of two or more files (or a file importing itself): the import circles. */
export function circles(graph: Graph): string[][] {
  // Tarjan's algorithm, iterative (a deep chain of imports must not overflow the stack).
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const out: string[][] = [];
  const edges = (v: string): readonly string[] => graph.get(v) ?? [];
  for (const start of graph.keys()) {
    if (index.has(start)) continue;
    const work: Array<{ v: string; i: number }> = [{ v: start, i: 0 }];
    index.set(start, next);
    low.set(start, next++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const top = work[work.length - 1]!;
      const es = edges(top.v);
      if (top.i < es.length) {
        const w = es[top.i++]!;
        if (!index.has(w)) {
          index.set(w, next);
          low.set(w, next++);
          stack.push(w);
          onStack.add(w);
          work.push({ v: w, i: 0 });
        } else if (onStack.has(w)) {
          low.set(top.v, Math.min(low.get(top.v)!, index.get(w)!));
        }
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1]!.v;
        low.set(parent, Math.min(low.get(parent)!, low.get(top.v)!));
      }
      if (low.get(top.v) === index.get(top.v)) {
        const group: string[] = [];
        let w: string;
        do {
          w = stack.pop()!;
          onStack.delete(w);
          group.push(w);
        } while (w !== top.v);
        if (group.length > 1 || edges(top.v).includes(top.v)) out.push(group.sort());
      }
    }
  }
  return out;
}

const SKIP_DIRS = new Set(['node_modules', 'dist', '.git', '.cache', 'fixtures', 'scripts', 'target', 'gen']);
/** TypeScript sources, not declarations (generated code under proto/gen is reached through its .d.ts). */
const TS_SOURCE = /(?<!\.d)\.ts$/;

/** The import graph of the TypeScript sources under `dirs` (project-relative), edges resolved inside the tree. */
export function importGraph(root: string, dirs: readonly string[]): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const d of dirs) {
    for (const r of sourceFiles(root, d, TS_SOURCE, SKIP_DIRS)) {
      const tos = new Set<string>();
      for (const s of specifiers(fs.readFileSync(path.join(root, r), 'utf8'))) {
        const to = resolveSpecifier(root, r, s);
        if (to !== null) tos.add(to);
      }
      graph.set(r, [...tos]);
    }
  }
  return graph;
}

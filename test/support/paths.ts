import fs from 'node:fs';
import path from 'node:path';

/** The project root: the nearest folder up from here whose package.json is named meridian (works from dist/ too). */
export function projectRoot(): string {
  let dir = __dirname;
  for (;;) {
    const pj = path.join(dir, 'package.json');
    if (fs.existsSync(pj) && (JSON.parse(fs.readFileSync(pj, 'utf8')) as { name?: string }).name === 'meridian') return dir;
    const up = path.dirname(dir);
    if (up === dir) return process.cwd();
    dir = up;
  }
}

/** test/fixtures: the project's own copy of the captures (origin and licence in its README). MERIDIAN_FIXTURES overrides. */
export const FIXTURES = process.env.MERIDIAN_FIXTURES ?? path.resolve(projectRoot(), 'test', 'fixtures');

export function fixture(...parts: string[]): string {
  return path.join(FIXTURES, ...parts);
}

/** The CLI as a child process: compiled JS under dist/, or the TypeScript source through ts-node in dev runs. */
export function cliCommand(): { cmd: string; args: string[] } {
  const compiled = __filename.endsWith('.js');
  const root = projectRoot();
  return compiled
    ? { cmd: process.execPath, args: [path.join(root, 'dist', 'infra', 'cli.js')] }
    : { cmd: process.execPath, args: ['-r', 'ts-node/register/transpile-only', path.join(root, 'infra', 'cli.ts')] };
}

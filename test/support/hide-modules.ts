import Module from 'node:module';

// Loaded with `node --require` (NODE_OPTIONS) into a child process to make packages "not installed" there, the way
// a platform without a build of them sees it: MERIDIAN_TEST_HIDE_MODULES=litesvm-* makes every require of a
// litesvm platform package fail with MODULE_NOT_FOUND, so litesvm's own loader reports its real error ("Cannot find
// native binding"). Names are comma-separated; a trailing * matches a prefix. Tests only.

const hidden = (process.env.MERIDIAN_TEST_HIDE_MODULES ?? '').split(',').map((s) => s.trim()).filter((s) => s.length > 0);

function isHidden(request: string): boolean {
  return hidden.some((h) => (h.endsWith('*') ? request.startsWith(h.slice(0, -1)) : request === h || request.startsWith(`${h}/`)));
}

type ResolveFilename = (this: unknown, request: string, ...rest: unknown[]) => string;
const m = Module as unknown as { _resolveFilename: ResolveFilename };
const original = m._resolveFilename;
m._resolveFilename = function (this: unknown, request: string, ...rest: unknown[]): string {
  if (isHidden(request)) {
    const e = new Error(`Cannot find module '${request}' (hidden by test/support/hide-modules)`) as NodeJS.ErrnoException;
    e.code = 'MODULE_NOT_FOUND';
    throw e;
  }
  return original.call(this, request, ...rest);
};

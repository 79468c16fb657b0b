import path from 'node:path';

// Where the anvil binary is. The npm package `@foundry-rs/anvil` ships it in one optional dependency per
// platform (`@foundry-rs/anvil-<os>-<arch>/bin/anvil`); the package's own launcher (bin.mjs) is ESM and would
// add a node process between us and anvil, so we resolve the platform package the same way it does and run the
// binary directly. ANVIL_BIN overrides (a system-wide foundry install, another version).

const OS: Partial<Record<NodeJS.Platform, string>> = { linux: 'linux', darwin: 'darwin', win32: 'win32' };
const ARCH: Partial<Record<string, string>> = { x64: 'amd64', arm64: 'arm64' };

export function anvilBinary(env: NodeJS.ProcessEnv = process.env): string {
  if (env.ANVIL_BIN !== undefined && env.ANVIL_BIN !== '') return env.ANVIL_BIN;
  const os = OS[process.platform];
  const arch = ARCH[process.arch];
  if (os === undefined || arch === undefined) throw new Error(`anvil: no @foundry-rs/anvil binary for ${process.platform}/${process.arch}; set ANVIL_BIN`);
  const pkg = `@foundry-rs/anvil-${os}-${arch}`;
  let manifest: string;
  try {
    // Resolved from @foundry-rs/anvil's own folder, as its launcher does: the platform package is its dependency.
    const base = path.dirname(require.resolve('@foundry-rs/anvil/package.json'));
    manifest = require.resolve(`${pkg}/package.json`, { paths: [base] });
  } catch {
    throw new Error(`anvil: package ${pkg} is not installed (npm install @foundry-rs/anvil installs it); or set ANVIL_BIN`);
  }
  return path.join(path.dirname(manifest), 'bin', process.platform === 'win32' ? 'anvil.exe' : 'anvil');
}

import fs from 'node:fs';
import path from 'node:path';

/**
 * A Go tool built on first use into `dir`, rebuilt only when `hash` (its pinned sources and the toolchain) changed:
 * the stamp beside the binary holds the hash it was built from. The build writes a temporary file that is renamed
 * into place, so a concurrent build of the same pins leaves the same bytes.
 */
export async function cachedGoBinary(dir: string, bin: string, hash: string, build: (out: string) => Promise<void>): Promise<string> {
  const file = path.join(dir, bin);
  const stampFile = path.join(dir, `${bin}.sha256`);
  if (fs.existsSync(file) && fs.existsSync(stampFile) && fs.readFileSync(stampFile, 'utf8') === hash) return file;
  fs.mkdirSync(dir, { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  await build(tmp);
  fs.renameSync(tmp, file);
  fs.writeFileSync(stampFile, hash);
  return file;
}

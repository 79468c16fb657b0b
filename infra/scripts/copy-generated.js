// tsc does not copy plain .js; the generated google-protobuf message code is .js + .d.ts.
const fs = require('node:fs');
const path = require('node:path');
const root = path.resolve(__dirname, '..', '..');
const src = path.join(root, 'proto', 'gen');
const dst = path.join(root, 'dist', 'proto', 'gen');
if (fs.existsSync(src)) {
  fs.mkdirSync(dst, { recursive: true });
  for (const f of fs.readdirSync(src)) if (f.endsWith('.js')) fs.copyFileSync(path.join(src, f), path.join(dst, f));
}
fs.chmodSync(path.join(root, 'dist', 'infra', 'cli.js'), 0o755);

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startBanner } from '../../infra/commands/start-banner';
import { hostPortOf, writeEndpointsFile, type Endpoints } from '../../infra/base/endpoints';

const endpoints: Endpoints = {
  metrics: 'http://127.0.0.1:9464/metrics',
  chain: { http: 'http://127.0.0.1:18899', ws: 'ws://127.0.0.1:18899' },
  ingest: 'udp://127.0.0.1:8002',
  stream: '127.0.0.1:20202',
  demo: { accounts: ['Demo1111111111111111111111111111111111111111'], payerSecretKey: Array.from({ length: 64 }, (_, i) => i) },
};

describe('start banner and endpoints file', () => {
  it('lists every address as HOST:PORT, the endpoints file, and a hint runnable from the project root', () => {
    const b = startBanner(endpoints, { endpointsFile: '.meridian/endpoints.json', cliScript: '/p/dist/infra/cli.js', cwd: '/p' });
    const lines = b.trimEnd().split('\n');
    assert.equal(lines.length, 9);
    for (const [name, hp] of [['stream', '127.0.0.1:20202'], ['ingest', '127.0.0.1:8002'], ['chain', '127.0.0.1:18899'], ['metrics', '127.0.0.1:9464'], ['endpoints', '.meridian/endpoints.json']]) {
      assert.ok(lines.some((l) => l.trim().startsWith(name!) && l.includes(hp!)), `${name} ${hp} in\n${b}`);
    }
    assert.doesNotMatch(b, /:\/\//);
    // The stream is at the subscribe CLI's default address: no --url needed.
    assert.equal(lines[lines.length - 1], '  node dist/infra/cli.js subscribe --include Demo1111111111111111111111111111111111111111');
  });

  it('spells the hint from another directory, with --url when the stream is elsewhere', () => {
    const b = startBanner({ ...endpoints, stream: '127.0.0.1:4242' }, { endpointsFile: 'e.json', cliScript: '/p/dist/infra/cli.js', cwd: '/home/me' });
    assert.match(b, /node \.\.\/\.\.\/p\/dist\/infra\/cli\.js subscribe --include Demo1+ --url 127\.0\.0\.1:4242\n$/);
  });

  it('writes the endpoints file atomically into a folder it creates, readable only by its owner', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'meridian-endpoints-'));
    try {
      const file = path.join(dir, '.meridian', 'endpoints.json');
      writeEndpointsFile(file, endpoints);
      assert.deepEqual(JSON.parse(fs.readFileSync(file, 'utf8')), endpoints);
      assert.equal(fs.statSync(file).mode & 0o777, 0o600);
      assert.deepEqual(fs.readdirSync(path.dirname(file)), ['endpoints.json']); // no temp file left behind
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
    assert.equal(hostPortOf('ws://[::1]:8900'), '[::1]:8900');
    assert.equal(hostPortOf('127.0.0.1:1'), '127.0.0.1:1');
  });
});

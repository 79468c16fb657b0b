import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { createLogger, registerSecret, scrubString } from '../../infra/base/log';
import { prettyLine } from '../../infra/base/log-pretty';

function capture(): { stream: Writable; lines: () => string[] } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      chunks.push(chunk.toString('utf8'));
      cb();
    },
  });
  return { stream, lines: () => chunks.join('').split('\n').filter((l) => l.length > 0) };
}

describe('logging rule: no URL, key, token or dedicated path reaches a log line', () => {
  const url = 'https://fra.rpc.example.net:8899/?api-key=0b8e6f7e-2f4a-4c59-9d51-4f4f0b7c1a22';
  const apiKey = '1f2e3d4c-5b6a-4978-8a9b-0c1d2e3f4a5b';
  const token = 'tok_live_9f8e7d6c5b4a39281706';
  const dedicated = '/d/8c1f0e2d7a6b5c4d3e2f1a0b';

  before(() => registerSecret(token, dedicated));

  it('scrubs URLs, UUID keys and registered secrets from strings', () => {
    const out = scrubString(`calling ${url} with ${apiKey} token=${token} path=${dedicated}`);
    assert.ok(!out.includes('example.net'), out);
    assert.ok(!out.includes(apiKey), out);
    assert.ok(!out.includes(token), out);
    assert.ok(!out.includes(dedicated), out);
    assert.match(out, /\[url\]/);
    assert.match(out, /\[key\]/);
    assert.match(out, /\[secret\]/);
  });

  it('scrubs messages, printf arguments, nested fields, errors and child bindings', () => {
    const { stream, lines } = capture();
    const log = createLogger({ destination: stream, level: 'debug' });
    const child = log.child({ upstream: url, rental: 'r1' });
    child.info({ req: { headers: { 'x-token': token }, note: `via ${url}` } }, 'proxying to %s', url);
    child.warn({ err: new Error(`upstream ${url} refused key ${apiKey}`) }, 'failed');
    log.error(`dedicated path ${dedicated} hit`);
    log.info({ endpoint: 'whatever', apiKey, token, path: dedicated }, 'fields named for credentials');
    const all = lines();
    assert.equal(all.length, 4);
    const text = all.join('\n');
    for (const secret of ['example.net', apiKey, token, dedicated, 'api-key=']) {
      assert.ok(!text.includes(secret), `log leaked ${secret}: ${text}`);
    }
    // Non-secret context survives.
    assert.ok(text.includes('"rental":"r1"'));
    assert.ok(text.includes('proxying to [url]'));
  });

  it('leaves ordinary text alone', () => {
    assert.equal(scrubString('slot 385970984 complete, 32 shreds'), 'slot 385970984 complete, 32 shreds');
  });
});

describe('log format: JSON lines for collectors, human lines on a terminal', () => {
  it('pretty: time, level, component, message and the other fields as key=value; still scrubbed', () => {
    const c = capture();
    const log = createLogger({ destination: c.stream, format: 'pretty' });
    log.child({ component: 'fanout' }).warn({ address: '127.0.0.1:20202', peer: 'https://x.example/?k=1' }, 'listening');
    const [line] = c.lines();
    assert.match(line!, /^\d\d:\d\d:\d\d\.\d{3} WARN  \[fanout\] listening address=127\.0\.0\.1:20202 peer=\[url\]$/);
  });

  it('json (the default when not asked, and auto on a pipe): one JSON object per line', () => {
    for (const format of [undefined, 'json', 'auto'] as const) {
      const c = capture();
      createLogger({ destination: c.stream, ...(format === undefined ? {} : { format }) }).info({ n: 1 }, 'hello');
      const o = JSON.parse(c.lines()[0]!) as { msg: string; n: number; level: number };
      assert.deepEqual([o.msg, o.n, o.level], ['hello', 1, 30]);
    }
  });

  it('auto renders for people when the destination is a terminal', () => {
    const c = capture();
    (c.stream as Writable & { isTTY?: boolean }).isTTY = true;
    createLogger({ destination: c.stream, format: 'auto' }).info('hello');
    assert.match(c.lines()[0]!, /^\d\d:\d\d:\d\d\.\d{3} INFO  hello$/);
  });

  it('a line that is not JSON passes unchanged', () => {
    assert.equal(prettyLine('not json'), 'not json');
  });
});

import assert from 'node:assert/strict';
import { prng } from './support';
import http2 from 'node:http2';
import { once } from 'node:events';
import fc from 'fast-check';
import { HpackDecoder, STATIC_TABLE, encodeHeaderBlock, type HeaderField, type HpackError } from '../../../fanout/h2/hpack';
import { HUFFMAN_CODES, HUFFMAN_LENGTHS, huffmanDecode, huffmanEncode } from '../../../fanout/h2/hpack-huffman';
import { FLAG, FRAME, SETTING, rawServer, type HeaderBlock } from './raw-peer';

// HPACK codec: RFC 7541 Appendix C examples, error cases, then both directions against nghttp2 (node:http2),
// then random and mutated blocks.

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');
const BIG_LIST = 1 << 20;

function fieldsOf(r: HeaderField[] | HpackError): HeaderField[] {
  if (!Array.isArray(r)) return assert.fail(`decode failed: ${r.error}`);
  return r;
}
function errorOf(r: HeaderField[] | HpackError): string {
  if (Array.isArray(r)) return assert.fail(`expected an error, got ${JSON.stringify(r)}`);
  return r.error;
}


describe('hpack huffman', () => {
  it('derives the RFC 7541 Appendix B codes', () => {
    assert.equal(HUFFMAN_CODES.length, 257);
    // Spot checks transcribed from RFC 7541 Appendix B: [symbol, code, bits]. The full derived table was
    // compared once, by script, with huffmanCodes/huffmanCodeLen of golang.org/x/net/http2/hpack (all 256 equal).
    const rfc: Array<[number, number, number]> = [
      [0, 0x1ff8, 13], [0x20, 0x14, 6], [0x30, 0x0, 5], [0x61, 0x3, 5], [0x7f, 0xffffffc, 28],
      [0x0a, 0x3ffffffc, 30], [0xff, 0x3ffffee, 26], [256, 0x3fffffff, 30],
    ];
    for (const [sym, code, bits] of rfc) assert.deepEqual([sym, HUFFMAN_CODES[sym], HUFFMAN_LENGTHS[sym]], [sym, code, bits]);
    // Kraft equality: a complete prefix code, no gaps and no overlaps.
    assert.equal(Array.from(HUFFMAN_LENGTHS).reduce((s, l) => s + 2 ** -l, 0), 1);
  });

  it('round-trips every octet and random latin1 strings', () => {
    const all = String.fromCharCode(...Array.from({ length: 256 }, (_, i) => i));
    assert.equal(huffmanDecode(huffmanEncode(all), 0, huffmanEncode(all).length), all);
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 200 }), (codes) => {
        const s = String.fromCharCode(...codes);
        const enc = huffmanEncode(s);
        assert.equal(huffmanDecode(Buffer.concat([Buffer.from([0xaa]), enc]), 1, enc.length + 1), s);
      }),
      { numRuns: 2000 },
    );
  });

  it('refuses EOS, padding of 8 bits or more, and padding that is not all ones', () => {
    const a = 0x1f; // 'a' = 00011, then 111 padding
    assert.equal(huffmanDecode(Buffer.from([a]), 0, 1), 'a');
    assert.equal(huffmanDecode(Buffer.alloc(0), 0, 0), '');
    assert.equal(huffmanDecode(hex('ffffffff'), 0, 4), null, 'EOS (30 ones) then 2 bits of padding');
    assert.equal(huffmanDecode(hex('1fff'), 0, 2), null, '11 bits of padding');
    assert.equal(huffmanDecode(hex('ff'), 0, 1), null, '8 bits of padding');
    assert.equal(huffmanDecode(hex('18'), 0, 1), null, 'padding 000');
    assert.equal(huffmanDecode(hex('1e'), 0, 1), null, 'padding 110');
  });

  it('decodes exactly the strings huffmanEncode gives back, over random input', () => {
    const rnd = prng(1);
    let decoded = 0;
    let refused = 0;
    for (let i = 0; i < 5000; i++) {
      const bytes = Buffer.from(Array.from({ length: Math.floor(rnd() * 12) }, () => Math.floor(rnd() * 256)));
      const s = huffmanDecode(bytes, 0, bytes.length);
      if (s === null) {
        refused++;
        continue;
      }
      decoded++;
      // The code is prefix-free and padding is fixed, so a string has one encoding.
      assert.ok(huffmanEncode(s).equals(bytes), `0x${bytes.toString('hex')} decoded to ${JSON.stringify(s)}`);
    }
    assert.ok(decoded > 100 && refused > 100, `decoded ${decoded}, refused ${refused}`);
  });
});

// RFC 7541 Appendix C: block hex transcribed from the RFC, expectations written from its text.
interface Step {
  block: string;
  fields: HeaderField[];
  /** Dynamic table after the block, newest first. */
  table: HeaderField[];
  size: number;
}
function series(maxTableSize: number, steps: Step[]): void {
  const d = new HpackDecoder({ maxTableSize });
  for (const s of steps) {
    assert.deepEqual(fieldsOf(d.decode(hex(s.block), BIG_LIST)), s.fields);
    assert.deepEqual(d.dynamicTable(), s.table);
    assert.equal(d.dynamicTableSize, s.size);
  }
}

const AUTH: HeaderField = [':authority', 'www.example.com'];
const NO_CACHE: HeaderField = ['cache-control', 'no-cache'];
const CUSTOM: HeaderField = ['custom-key', 'custom-value'];
const REQUESTS = (b1: string, b2: string, b3: string): Step[] => [
  { block: b1, fields: [[':method', 'GET'], [':scheme', 'http'], [':path', '/'], AUTH], table: [AUTH], size: 57 },
  {
    block: b2,
    fields: [[':method', 'GET'], [':scheme', 'http'], [':path', '/'], AUTH, NO_CACHE],
    table: [NO_CACHE, AUTH],
    size: 110,
  },
  {
    block: b3,
    fields: [[':method', 'GET'], [':scheme', 'https'], [':path', '/index.html'], AUTH, CUSTOM],
    table: [CUSTOM, NO_CACHE, AUTH],
    size: 164,
  },
];
const PRIVATE: HeaderField = ['cache-control', 'private'];
const DATE1: HeaderField = ['date', 'Mon, 21 Oct 2013 20:13:21 GMT'];
const DATE2: HeaderField = ['date', 'Mon, 21 Oct 2013 20:13:22 GMT'];
const LOCATION: HeaderField = ['location', 'https://www.example.com'];
const GZIP: HeaderField = ['content-encoding', 'gzip'];
const COOKIE: HeaderField = ['set-cookie', 'foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1'];
const RESPONSES = (b1: string, b2: string, b3: string): Step[] => [
  {
    block: b1,
    fields: [[':status', '302'], PRIVATE, DATE1, LOCATION],
    table: [LOCATION, DATE1, PRIVATE, [':status', '302']],
    size: 222,
  },
  {
    block: b2, // evicts :status 302
    fields: [[':status', '307'], PRIVATE, DATE1, LOCATION],
    table: [[':status', '307'], LOCATION, DATE1, PRIVATE],
    size: 222,
  },
  {
    block: b3, // evicts all but the three new entries
    fields: [[':status', '200'], PRIVATE, DATE2, LOCATION, GZIP, COOKIE],
    table: [COOKIE, GZIP, DATE2],
    size: 215,
  },
];

describe('hpack decoder, RFC 7541 Appendix C', () => {
  it('C.2 single representations', () => {
    const d = new HpackDecoder();
    assert.deepEqual(fieldsOf(d.decode(hex('400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572'), BIG_LIST)), [
      ['custom-key', 'custom-header'],
    ]);
    assert.equal(d.dynamicTableSize, 55);
    assert.deepEqual(fieldsOf(d.decode(hex('040c 2f73 616d 706c 652f 7061 7468'), BIG_LIST)), [[':path', '/sample/path']]);
    assert.deepEqual(fieldsOf(d.decode(hex('1008 7061 7373 776f 7264 0673 6563 7265 74'), BIG_LIST)), [['password', 'secret']]);
    assert.deepEqual(fieldsOf(d.decode(hex('82'), BIG_LIST)), [[':method', 'GET']]);
    assert.equal(d.dynamicTableSize, 55, 'only C.2.1 indexes');
  });

  it('C.3 requests without Huffman', () =>
    series(4096, REQUESTS(
      '8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d',
      '8286 84be 5808 6e6f 2d63 6163 6865',
      '8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65',
    )));

  it('C.4 requests with Huffman', () =>
    series(4096, REQUESTS(
      '8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff',
      '8286 84be 5886 a8eb 1064 9cbf',
      '8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf',
    )));

  it('C.5 responses without Huffman, table size 256, with eviction', () =>
    series(256, RESPONSES(
      `4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32
       3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 6c65 2e63 6f6d`,
      '4803 3330 37c1 c0bf',
      `88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d 54c0 5a04 677a 6970
       7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 5541 5851 5745 4f49 553b 206d 6178 2d61
       6765 3d33 3630 303b 2076 6572 7369 6f6e 3d31`,
    )));

  it('C.6 responses with Huffman, table size 256, with eviction', () =>
    series(256, RESPONSES(
      `4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e 919d 29ad
       1718 63c7 8f0b 97c8 e9ae 82ae 43d3`,
      '4883 640e ffc1 c0bf',
      `88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7 821d d7f2
       e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07`,
    )));
});

describe('hpack decoder, edges and errors', () => {
  const cases: Array<[what: string, block: string, maxTableSize: number, maxList: number, reason: RegExp]> = [
    ['indexed field 0', '80', 4096, BIG_LIST, /index 0/],
    ['index past an empty dynamic table', 'be', 4096, BIG_LIST, /index 62 is beyond/],
    ['name index past the tables', '7f00 0161', 4096, BIG_LIST, /name index 63 is beyond/],
    ['integer over 2^31-1', 'ff ff ff ff ff 0f', 4096, BIG_LIST, /overflows/],
    ['six continuation octets', 'ff 80 80 80 80 80 00', 4096, BIG_LIST, /overflows/],
    ['integer cut off', 'ff', 4096, BIG_LIST, /index truncated/],
    ['string length past the block', '40 05 6162', 4096, BIG_LIST, /runs past/],
    ['missing value string', '41', 4096, BIG_LIST, /string literal truncated/],
    ['Huffman EOS', '00 84 ffffffff 00', 4096, BIG_LIST, /Huffman/],
    ['Huffman padding of 11 bits', '00 82 1fff 00', 4096, BIG_LIST, /Huffman/],
    ['Huffman padding of zeros', '00 81 18 00', 4096, BIG_LIST, /Huffman/],
    ['size update above our setting', '3f e1 1f', 4095, BIG_LIST, /exceeds 4095/],
    ['size update after a field', '82 20', 4096, BIG_LIST, /after a header field/],
    ['header list one byte too big', '82', 4096, 41, /exceeds 41/],
  ];
  for (const [what, block, maxTableSize, maxList, reason] of cases) {
    it(`refuses ${what}`, () => {
      assert.match(errorOf(new HpackDecoder({ maxTableSize }).decode(hex(block), maxList)), reason);
    });
  }

  it('accepts the boundaries just inside those limits', () => {
    assert.deepEqual(fieldsOf(new HpackDecoder().decode(hex('82'), 42)), [[':method', 'GET']]);
    // Two size updates in a row (a lowered then raised setting), the second to exactly 4096, then a field.
    assert.deepEqual(fieldsOf(new HpackDecoder().decode(hex('20 3f e1 1f 82'), BIG_LIST)), [[':method', 'GET']]);
    // 2^31-1 as a string length decodes as an integer and then fails only on the missing octets.
    assert.match(errorOf(new HpackDecoder().decode(hex('00 7f 80 ff ff ff 07'), BIG_LIST)), /length 2147483647 runs past/);
  });

  it('evicts oldest first, empties the table for an oversized entry, and obeys a size update to 0', () => {
    const d = new HpackDecoder({ maxTableSize: 80 });
    fieldsOf(d.decode(hex('40 0178 0161  40 0179 0162'), BIG_LIST)); // x: a, y: b, 34 bytes each
    assert.deepEqual(d.dynamicTable(), [['y', 'b'], ['x', 'a']]);
    fieldsOf(d.decode(hex('40 017a 0163'), BIG_LIST)); // z: c evicts x
    assert.deepEqual(d.dynamicTable(), [['z', 'c'], ['y', 'b']]);
    assert.deepEqual(fieldsOf(d.decode(hex('be bf'), BIG_LIST)), [['z', 'c'], ['y', 'b']]);
    const long = 'v'.repeat(47); // 1 + 47 + 32 = 80 fits exactly
    fieldsOf(d.decode(Buffer.concat([hex('40 0177 2f'), Buffer.from(long)]), BIG_LIST));
    assert.deepEqual(d.dynamicTable(), [['w', long]]);
    assert.equal(d.dynamicTableSize, 80);
    const tooLong = Buffer.concat([hex('40 0177 30'), Buffer.from('v'.repeat(48))]);
    assert.deepEqual(fieldsOf(d.decode(tooLong, BIG_LIST)), [['w', 'v'.repeat(48)]]);
    assert.deepEqual(d.dynamicTable(), [], 'an entry larger than the table empties it');
    fieldsOf(d.decode(hex('40 0178 0161'), BIG_LIST));
    assert.deepEqual(fieldsOf(d.decode(hex('20 82'), BIG_LIST)), [[':method', 'GET']]);
    assert.equal(d.dynamicTableSize, 0);
    assert.match(errorOf(d.decode(hex('be'), BIG_LIST)), /beyond/);
    // With capacity 0 nothing is added, yet the field is still delivered.
    assert.deepEqual(fieldsOf(d.decode(hex('40 0178 0161'), BIG_LIST)), [['x', 'a']]);
    assert.equal(d.dynamicTableSize, 0);
  });

  it('keeps octets above 0x7f as latin1 chars, raw and Huffman-coded', () => {
    const value = 'caf\u00e9 \u00ff\u0000';
    const huff = huffmanEncode(value);
    const block = Buffer.concat([hex('0f10'), Buffer.from([value.length]), Buffer.from(value, 'latin1'), hex('0f10'), Buffer.from([0x80 | huff.length]), huff]);
    assert.deepEqual(fieldsOf(new HpackDecoder().decode(block, BIG_LIST)), [['content-type', value], ['content-type', value]]);
  });
});

describe('hpack encoder', () => {
  it('writes :status 200 indexed and the rest as literals without indexing, strings raw', () => {
    const block = encodeHeaderBlock([[':status', '200'], ['content-type', 'application/grpc'], ['x-custom', 'v'], [':status', '404']]);
    assert.equal(
      block.toString('hex'),
      '88' + '0f10' + '10' + Buffer.from('application/grpc').toString('hex') + '00' + '08' + Buffer.from('x-custom').toString('hex') + '01' + '76' + '08' + '03' + '343034',
    );
  });

  it('uses multi-octet lengths past 126 and leaves a decoder table untouched', () => {
    const long = 'q'.repeat(300);
    const block = encodeHeaderBlock([['x-long', long]]);
    assert.equal(block.subarray(0, 11).toString('hex'), '00' + '06' + Buffer.from('x-long').toString('hex') + '7f ad 01'.replace(/ /g, ''));
    const d = new HpackDecoder();
    assert.deepEqual(fieldsOf(d.decode(block, BIG_LIST)), [['x-long', long]]);
    assert.equal(d.dynamicTableSize, 0);
  });

  it('round-trips random fields through HpackDecoder', () => {
    const latin1 = (max: number) => fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: max }).map((a) => String.fromCharCode(...a));
    const name = fc.oneof(fc.constantFrom(...STATIC_TABLE.map(([n]) => n)), latin1(140));
    const value = fc.oneof(fc.constantFrom('200', '', 'gzip'), latin1(300));
    fc.assert(
      fc.property(fc.array(fc.tuple(name, value), { maxLength: 20 }), (fields) => {
        const d = new HpackDecoder();
        assert.deepEqual(fieldsOf(d.decode(encodeHeaderBlock(fields), BIG_LIST)), fields);
        assert.equal(d.dynamicTableSize, 0);
      }),
      { numRuns: 1000 },
    );
  });
});

// Both directions against nghttp2: node:http2 as the client, our raw server (raw-peer.ts) as the server.

const COMMON: Array<[string, string]> = [
  ['content-type', 'application/grpc'],
  ['te', 'trailers'],
  ['user-agent', 'grpc-node-js/1.14.7'],
  ['grpc-accept-encoding', 'identity,deflate,gzip'],
];
const customs = (n: number, tag: string): Array<[string, string]> =>
  Array.from({ length: n }, (_, i) => [`x-custom-${i}`, `value-${tag}-${i}-${'~!|^{}'.repeat(i % 4)}`]);

interface Sent {
  path: string;
  headers: Array<[string, string]>;
  /** SETTINGS_HEADER_TABLE_SIZE values we announced (and saw acked) just before this request. */
  tableSizesBefore: number[];
}

function requestPlan(): Sent[] {
  const rnd = prng(42);
  const bytes = (n: number): Buffer => Buffer.from(Array.from({ length: n }, () => Math.floor(rnd() * 256)));
  const printable = (n: number): string =>
    'x' + String.fromCharCode(...Array.from({ length: n - 2 }, () => 0x20 + Math.floor(rnd() * 95))) + 'x';
  const big = Array.from({ length: 60 }, (_, i): [string, string] => [`x-big-${i}`, bytes(400).toString('base64')]);
  return [
    { path: '/svc/First', headers: [...COMMON, ...customs(30, 'a')], tableSizesBefore: [] },
    { path: '/svc/First', headers: [...COMMON, ...customs(30, 'a')], tableSizesBefore: [] },
    {
      path: '/svc/Long',
      headers: [...COMMON, ['authorization', 'Bearer abc.def'], ['x-long', printable(3000)], ['x-data-bin', bytes(200).toString('base64')], ['x-latin', 'na\u00efve']],
      tableSizesBefore: [],
    },
    { path: '/svc/Big', headers: [...COMMON, ...big], tableSizesBefore: [] },
    { path: '/svc/Small', headers: [...COMMON, ...customs(10, 'b')], tableSizesBefore: [256] },
    { path: '/svc/Small', headers: [...COMMON, ...customs(10, 'c'), ['x-long2', printable(300)]], tableSizesBefore: [] },
    { path: '/svc/Again', headers: [...COMMON, ...customs(5, 'd')], tableSizesBefore: [0, 1024] },
    { path: '/svc/Again', headers: [...COMMON, ...customs(5, 'd')], tableSizesBefore: [] },
  ];
}

async function get(client: http2.ClientHttp2Session, headers: http2.OutgoingHttpHeaders): Promise<{ headers: http2.IncomingHttpHeaders; trailers: http2.IncomingHttpHeaders | null }> {
  const req = client.request(headers, { endStream: true });
  let trailers: http2.IncomingHttpHeaders | null = null;
  req.on('trailers', (t) => (trailers = t));
  req.resume();
  const [response] = (await once(req, 'response')) as [http2.IncomingHttpHeaders];
  if (!req.closed) await once(req, 'close');
  return { headers: response, trailers };
}

describe('hpack against nghttp2 (node:http2 client)', () => {
  const plan = requestPlan();
  const blocks: HeaderBlock[] = [];
  const decoded: Array<HeaderField[] | HpackError> = [];
  const tableSizes: number[] = [];
  let authority = '';

  before(async () => {
    const srv = await rawServer((peer, b) => {
      blocks.push(b);
      peer.send(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, b.streamId, encodeHeaderBlock([[':status', '200']]));
    });
    authority = `127.0.0.1:${srv.port}`;
    const client = http2.connect(`http://${authority}`);
    try {
      await once(client, 'connect');
      for (const p of plan) {
        for (const size of p.tableSizesBefore) await srv.peers[0].settings([[SETTING.HEADER_TABLE_SIZE, size]]);
        await get(client, { ':path': p.path, ...Object.fromEntries(p.headers) });
      }
    } finally {
      client.close();
      await srv.close();
    }
    const d = new HpackDecoder({ maxTableSize: 4096 });
    for (const b of blocks) {
      decoded.push(d.decode(b.block, BIG_LIST));
      tableSizes.push(d.dynamicTableSize);
    }
  });

  it('decodes every request block to exactly what the client sent', () => {
    assert.equal(blocks.length, plan.length);
    plan.forEach((p, i) => {
      const fields = fieldsOf(decoded[i]);
      const pseudo = fields.filter(([n]) => n.startsWith(':'));
      assert.deepEqual(fields.slice(0, pseudo.length), pseudo, `request ${i}: pseudo-headers come first`);
      assert.deepEqual(
        new Map(pseudo),
        new Map([[':method', 'GET'], [':path', p.path], [':scheme', 'http'], [':authority', authority]]),
      );
      assert.equal(pseudo.length, 4);
      assert.deepEqual(fields.slice(pseudo.length), p.headers, `request ${i}`);
    });
  });

  it('saw nghttp2 use its dynamic table and Huffman coding', () => {
    assert.equal(blocks.length, plan.length);
    assert.ok(blocks[1].block.length * 4 < blocks[0].block.length, `repeat block ${blocks[1].block.length} vs first ${blocks[0].block.length}`);
    const raw = encodeHeaderBlock(fieldsOf(decoded[0]));
    assert.ok(blocks[0].block.length < raw.length * 0.9, `first block ${blocks[0].block.length} vs raw ${raw.length}`);
    const binValue = plan[2].headers.find(([n]) => n === 'x-data-bin')?.[1] ?? '';
    assert.ok(Buffer.from(binValue, 'base64').length === 200);
  });

  it('joined a block over 16 KiB from HEADERS and CONTINUATION frames', () => {
    const big = blocks[3];
    assert.ok(big.block.length > 16384, `block ${big.block.length} bytes`);
    assert.ok(big.frames >= 2, `${big.frames} frames`);
    assert.equal(fieldsOf(decoded[3]).length, 4 + COMMON.length + 60);
  });

  it('follows the size updates our SETTINGS_HEADER_TABLE_SIZE changes cause', () => {
    assert.equal(blocks.length, plan.length);
    assert.equal(blocks[4].block[0] & 0xe0, 0x20, 'block after SETTINGS 256 starts with a size update');
    assert.ok(tableSizes[3] > 256, `table before the change: ${tableSizes[3]}`);
    assert.ok(tableSizes[4] <= 256 && tableSizes[5] <= 256, `tables after: ${tableSizes[4]}, ${tableSizes[5]}`);
    assert.equal(blocks[6].block[0] & 0xe0, 0x20, 'block after SETTINGS 0, 1024 starts with a size update');
    assert.ok(tableSizes[6] <= 1024 && tableSizes[7] <= 1024);
    assert.ok(blocks[7].block.length * 3 < blocks[6].block.length, 'the repeat after the change is indexed again');
  });

  it('survives random and mutated blocks: an error or fields within maxListBytes, never an exception', () => {
    assert.equal(blocks.length, plan.length);
    const rnd = prng(7);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)];
    const int = (n: number): number => Math.floor(rnd() * n);
    const sequences: Buffer[][] = [blocks.map((b) => b.block), REQUESTS('8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff', '8286 84be 5886 a8eb 1064 9cbf', '8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf').map((s) => hex(s.block))];
    const mutate = (b: Buffer): Buffer => {
      const out = Buffer.from(b);
      const pos = int(Math.max(out.length, 1));
      switch (int(6)) {
        case 0: if (out.length) out[pos] ^= 1 << int(8); return out;
        case 1: if (out.length) out[pos] = int(256); return out;
        case 2: return out.subarray(0, pos);
        case 3: return Buffer.concat([out.subarray(0, pos), Buffer.from([pick([0x00, 0x3f, 0x7f, 0xff, 0x80, int(256)])]), out.subarray(pos)]);
        case 4: return Buffer.concat([out.subarray(0, pos), out.subarray(pos + 1)]);
        default: { const other = pick(pick(sequences)); const s = int(other.length + 1); return Buffer.concat([out.subarray(0, pos), other.subarray(s, s + int(40)), out.subarray(pos)]); }
      }
    };
    let oks = 0;
    let errors = 0;
    for (let i = 0; i < 6000; i++) {
      const maxTableSize = pick([0, 64, 256, 4096]);
      const maxList = pick([0, 100, 1000, 1 << 16, BIG_LIST]);
      const d = new HpackDecoder({ maxTableSize });
      let block: Buffer;
      if (i % 4 === 0) {
        block = Buffer.from(Array.from({ length: int(48) }, () => int(256)));
      } else {
        const seq = pick(sequences);
        const k = int(seq.length);
        for (let j = 0; j < k; j++) d.decode(seq[j], BIG_LIST); // build the table the block refers to
        block = seq[k];
        for (let m = 1 + int(i % 4 === 1 ? 1 : 6); m > 0; m--) block = mutate(block);
      }
      const r = d.decode(block, maxList);
      if (Array.isArray(r)) {
        oks++;
        const listBytes = r.reduce((s, [n, v]) => s + n.length + v.length + 32, 0);
        assert.ok(listBytes <= maxList, `case ${i}: ${listBytes} > ${maxList}`);
        for (const f of r) assert.ok(f.length === 2 && typeof f[0] === 'string' && typeof f[1] === 'string');
      } else {
        errors++;
        assert.ok(typeof r.error === 'string' && r.error.length > 0);
      }
      assert.ok(d.dynamicTableSize <= maxTableSize, `case ${i}: table ${d.dynamicTableSize} > ${maxTableSize}`);
    }
    assert.ok(oks > 300 && errors > 300, `${oks} decoded, ${errors} refused`);
  });
});

describe('hpack encoder against nghttp2 (node:http2 client)', () => {
  it('the client reads exactly our response headers and trailers', async () => {
    const long = 'L'.repeat(300);
    const bin = Buffer.from(Array.from({ length: 64 }, (_, i) => (i * 37) & 0xff)).toString('base64');
    const responses: Record<string, { headers: Array<[string, string]>; trailers: Array<[string, string]> }> = {
      '/ok': {
        headers: [[':status', '200'], ['content-type', 'application/grpc'], ['grpc-encoding', 'identity'], ['x-custom', 'v'], ['server', 'meridian'], ['x-long', long], ['x-thing-bin', bin], ['x-latin', 'caf\u00e9']],
        trailers: [['grpc-status', '0'], ['grpc-message', 'all good'], ['x-trailer', 't']],
      },
      '/missing': { headers: [[':status', '404'], ['content-type', 'text/plain']], trailers: [['grpc-status', '12']] },
    };
    const requests = new HpackDecoder(); // one connection, so one decoder for the client's blocks
    const srv = await rawServer((peer, b) => {
      const path = fieldsOf(requests.decode(b.block, BIG_LIST)).find(([n]) => n === ':path')?.[1] ?? '';
      const r = responses[path];
      peer.send(FRAME.HEADERS, FLAG.END_HEADERS, b.streamId, encodeHeaderBlock(r.headers));
      peer.send(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, b.streamId, encodeHeaderBlock(r.trailers));
    });
    const client = http2.connect(`http://127.0.0.1:${srv.port}`);
    try {
      await once(client, 'connect');
      for (const [path, want] of Object.entries(responses)) {
        const got = await get(client, { ':path': path });
        assert.deepEqual(Object.entries(got.headers).map(([k, v]) => [k, String(v)]), want.headers, path);
        assert.ok(got.trailers !== null, `${path}: trailers`);
        assert.deepEqual(Object.entries(got.trailers).map(([k, v]) => [k, String(v)]), want.trailers, path);
      }
    } finally {
      client.close();
      await srv.close();
    }
  });
});

import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { StreamClient, type PlainResponse } from '../support/stream-client';
import { b58, makeTx, startTestFanout, testKey, testKey58, type TestFanout, type TestTx } from './support';

// Endpoint A over loopback with real grpc-js clients: the generated StreamService stub (StreamClient's
// default), /arpc.ARPCService/Subscribe and the unpackaged alias. Absence is proven with a sentinel: records
// are processed in publish order, so once a later matching transaction arrives, an earlier one that was
// going to arrive already has.

const SENTINEL_KEY = testKey(999_999);
const SENTINEL = { sentinel: { accountInclude: [b58(SENTINEL_KEY)] } };

const isTx = (t: TestTx) => (r: PlainResponse): boolean => r.transaction?.signature === b58(t.signature);
const isPong = (id: number) => (r: PlainResponse): boolean => r.pingId === id && r.transaction === undefined;

/** Sends a ping and waits for its echo: every request before it has been applied. */
async function sync(c: StreamClient, id: number): Promise<void> {
  c.send({ pingId: id });
  await c.waitFor(isPong(id), 5000, c.responses.length);
}

// Both transports serve the same contract: the own HTTP/2 server (the default) and grpc-js (the reference).
for (const transport of ['h2', 'grpc-js'] as const) {
  describe(`fanout stream (Endpoint A), ${transport} server, grpc-js clients`, function () {
    let f: TestFanout;
    const clients: StreamClient[] = [];
    const open = (opts: Parameters<typeof StreamClient.open>[1] = {}): StreamClient => {
      const c = StreamClient.open(f.address, opts);
      clients.push(c);
      return c;
    };

    before(async () => {
      f = await startTestFanout({ heartbeatMs: 150, maxFilterUpdatesPerSec: 50, transport });
    });
    afterEach(async () => {
      await Promise.all(clients.splice(0).map((c) => c.close()));
    });
    after(async () => {
      await f.close();
    });

    /** Publishes `txs` then a sentinel; resolves once the sentinel reached `c` (which must have the sentinel filter). */
    async function publishAndFence(c: StreamClient, ...txs: TestTx[]): Promise<TestTx> {
      const s = makeTx({ keys: [SENTINEL_KEY] });
      await f.publishTx(...txs, s);
      await c.waitFor(isTx(s));
      return s;
    }

    it('sends response headers as soon as the stream opens, before any request', async () => {
      const c = open();
      const headers = await Promise.race([c.headers, new Promise<null>((r) => setTimeout(() => r(null), 3000))]);
      assert.notEqual(headers, null, 'no headers within 3 s without writing anything');
    });

    for (const service of ['StreamService', 'ARPCService', 'unpackaged'] as const) {
      it(`delivers a matching transaction byte for byte through ${service}`, async () => {
        const c = open({ service });
        const t = makeTx({ base: 0 }); // 23 static keys, legacy, 4 signatures
        c.send({ transactions: { mine: { accountInclude: [b58(t.fields.accountKeys[5]!)] } } });
        await sync(c, 1);
        await f.publishTx(t);
        const r = await c.waitFor(isTx(t));
        assert.deepEqual(r.filters, ['mine']);
        assert.equal(r.pingId, undefined);
        assert.equal(r.newSlot, undefined);
        assert.ok(r.createdAtMs !== undefined && Math.abs(r.createdAtMs - Date.now()) < 10_000);
        const got = c.raw[c.responses.indexOf(r)]!.getTransaction()!;
        assert.deepEqual(Buffer.from(got.serializeBinary()), t.message, 'the transaction message is the encoded bytes, untouched');
        assert.deepEqual(r.transaction!.accountKeys, t.fields.accountKeys.map(b58));
      });
    }

    it('a new stream starts empty: nothing earlier is replayed, nothing arrives before a filter', async () => {
      const before = makeTx({ keys: [testKey(1)] });
      await f.publishTx(before);
      const c = open();
      await sync(c, 7);
      await f.publishTx(makeTx({ keys: [testKey(1)] })); // no filter yet: not delivered
      c.send({ transactions: { ...SENTINEL, one: { accountInclude: [testKey58(1)] } } });
      await sync(c, 8);
      const after = makeTx({ keys: [testKey(1)] });
      const sentinel = await publishAndFence(c, after);
      assert.deepEqual(c.transactions.map((t) => t.signature), [b58(after.signature), b58(sentinel.signature)]);
    });

    it('a non-empty map replaces the whole filter set; an empty map changes nothing', async () => {
      const c = open();
      c.send({ transactions: { ...SENTINEL, a: { accountInclude: [testKey58(10)] } } });
      await sync(c, 1);
      c.send({ transactions: { ...SENTINEL, b: { accountInclude: [testKey58(11)] } } });
      await sync(c, 2);
      const ta = makeTx({ keys: [testKey(10)] });
      const tb = makeTx({ keys: [testKey(11)] });
      await publishAndFence(c, ta, tb);
      assert.equal(c.responses.filter(isTx(ta)).length, 0, 'filter a was replaced, not kept');
      assert.deepEqual(c.responses.filter(isTx(tb)).map((r) => r.filters), [['b']]);

      c.send({ transactions: {}, pingId: 3 });
      await c.waitFor(isPong(3));
      const tb2 = makeTx({ keys: [testKey(11)] });
      await publishAndFence(c, tb2);
      assert.equal(c.responses.filter(isTx(tb2)).length, 1, 'an empty map keeps the filters');
    });

    it('no acknowledgement of a filter change (only the ping is answered)', async () => {
      const c = open();
      c.send({ transactions: { a: { accountInclude: [testKey58(12)] } } });
      c.send({ transactions: { b: {} } });
      await sync(c, 4);
      assert.ok(c.responses.length >= 1);
      const notPings = c.responses.filter((r) => !(r.pingId === 4 || r.pingId === 0) || r.transaction !== undefined || r.newSlot !== undefined || r.filters.length > 0);
      assert.deepEqual(notPings, [], 'only the ping echo and heartbeats');
    });

    it('AND within a filter; match-all with exclude; empty filter; one response naming every matching filter', async () => {
      const c = open();
      c.send({
        transactions: {
          ...SENTINEL,
          and: { accountInclude: [testKey58(20), testKey58(21)], accountRequired: [testKey58(22)], accountExclude: [testKey58(23)] },
          notExcluded: { accountExclude: [testKey58(24)] },
        },
      });
      await sync(c, 1);
      const both = makeTx({ keys: [testKey(20), testKey(22)] });
      const noRequired = makeTx({ keys: [testKey(21)] });
      const excludedAnd = makeTx({ keys: [testKey(20), testKey(22), testKey(23)] });
      const excludedAll = makeTx({ keys: [testKey(24), testKey(21), testKey(22)] });
      await publishAndFence(c, both, noRequired, excludedAnd, excludedAll);
      assert.deepEqual(c.responses.filter(isTx(both)).map((r) => r.filters), [['and', 'notExcluded']]);
      assert.deepEqual(c.responses.filter(isTx(noRequired)).map((r) => r.filters), [['notExcluded']]);
      assert.deepEqual(c.responses.filter(isTx(excludedAnd)).map((r) => r.filters), [['notExcluded']]);
      assert.deepEqual(c.responses.filter(isTx(excludedAll)).map((r) => r.filters), [['and']], '24 excludes only from notExcluded');
    });

    it('an entirely empty filter matches every transaction', async () => {
      const c = open();
      c.send({ transactions: { everything: {} } });
      await sync(c, 1);
      const t1 = makeTx({ base: 1 });
      const t2 = makeTx({ keys: [] });
      await f.publishTx(t1, t2);
      assert.deepEqual((await c.waitFor(isTx(t1))).filters, ['everything']);
      assert.deepEqual((await c.waitFor(isTx(t2))).filters, ['everything']);
    });

    it('new_seen_slots: slot responses carry only new_slot and created_at; the switch is sticky and independent', async () => {
      const c = open();
      c.send({ newSeenSlots: true });
      await sync(c, 1);
      await f.publishSlot(501n);
      const r = await c.waitFor((x) => x.newSlot === 501);
      assert.deepEqual(Object.keys(r).sort(), ['createdAtMs', 'filters', 'newSlot']);
      assert.deepEqual(r.filters, []);
      c.send({ transactions: { a: { accountInclude: [testKey58(30)] } } }); // new_seen_slots absent: stays on
      await sync(c, 2);
      await f.publishSlot(502n);
      await c.waitFor((x) => x.newSlot === 502);
      c.send({ newSeenSlots: false });
      await sync(c, 3);
      await f.publishSlot(503n);
      const t = makeTx({ keys: [testKey(30)] });
      await f.publishTx(t);
      await c.waitFor(isTx(t));
      await sync(c, 4);
      assert.equal(c.responses.filter((x) => x.newSlot === 503).length, 0);
    });

    it('a stream without new_seen_slots gets no slots', async () => {
      const c = open();
      c.send({ transactions: { ...SENTINEL } });
      await sync(c, 1);
      await f.publishSlot(601n);
      await publishAndFence(c);
      assert.equal(c.responses.filter((x) => x.newSlot !== undefined).length, 0);
    });

    it('echoes ping_id, including in the same message as the filter map', async () => {
      const c = open();
      c.send({ transactions: { a: { accountInclude: [testKey58(40)] } }, pingId: 77 });
      const r = await c.waitFor(isPong(77));
      assert.deepEqual(r, { filters: [], pingId: 77 });
      c.send({ pingId: -5 });
      assert.deepEqual(await c.waitFor(isPong(-5)), { filters: [], pingId: -5 });
    });

    it('heartbeats (ping_id 0 and nothing else) reach a subscriber with no filters', async () => {
      const c = open();
      const hb = await c.waitFor((r) => r.pingId === 0, 3000);
      assert.deepEqual(hb, { filters: [], pingId: 0 }, 'no created_at, no filters, no transaction, no slot');
      await c.waitFor((r) => r.pingId === 0, 3000, c.responses.indexOf(hb) + 1);
    });

    it('duplicates by signature (redundant ingest workers) are delivered once', async () => {
      const c = open();
      c.send({ transactions: { ...SENTINEL, d: { accountInclude: [testKey58(50)] } } });
      await sync(c, 1);
      const t = makeTx({ keys: [testKey(50)] });
      await f.publishTx(t, t);
      await f.publishTx(t);
      await publishAndFence(c);
      assert.equal(c.responses.filter(isTx(t)).length, 1);
      assert.ok(f.fanout.stats().dedupeDrops >= 2);
    });

    it('two subscribers each get their own filter names for the same transaction', async () => {
      const a = open();
      const b = open({ service: 'ARPCService' });
      a.send({ transactions: { alpha: { accountInclude: [testKey58(60)] } } });
      b.send({ transactions: { beta: { accountRequired: [testKey58(60)] }, gamma: {} } });
      await Promise.all([sync(a, 1), sync(b, 1)]);
      const t = makeTx({ keys: [testKey(60)] });
      await f.publishTx(t);
      assert.deepEqual((await a.waitFor(isTx(t))).filters, ['alpha']);
      assert.deepEqual((await b.waitFor(isTx(t))).filters, ['beta', 'gamma']);
    });
  });

  describe(`fanout stream errors, ${transport} server, grpc-js clients`, function () {
    let f: TestFanout;
    before(async () => {
      f = await startTestFanout({ maxFilters: 3, maxKeysPerList: 4, maxFilterNameLen: 8, maxFilterUpdatesPerSec: 5, transport });
    });
    after(async () => {
      await f.close();
    });

    async function endsWith(req: Parameters<StreamClient['send']>[0], service: 'StreamService' | 'ARPCService' = 'StreamService') {
      const c = StreamClient.open(f.address, { service });
      c.send(req);
      return c.waitForEnd(5000);
    }

    it('invalid base58 → INVALID_ARGUMENT naming filter, list and key', async () => {
      const s = await endsWith({ transactions: { f1: { accountInclude: ['I0lO+notbase58'] } } });
      assert.equal(s.code, grpc.status.INVALID_ARGUMENT);
      assert.match(s.details, /"f1" account_include\[0\] "I0lO\+notbase58": not valid base58/);
    });

    it('valid base58 of the wrong length → INVALID_ARGUMENT', async () => {
      const s = await endsWith({ transactions: { f1: { accountExclude: [testKey58(1), b58(Buffer.alloc(33, 9))] } } }, 'ARPCService');
      assert.equal(s.code, grpc.status.INVALID_ARGUMENT);
      assert.match(s.details, /account_exclude\[1\].*decodes to 33 bytes, expected 32/);
    });

    it('limits: filters, keys per list, name length → INVALID_ARGUMENT', async () => {
      const tooMany = await endsWith({ transactions: { a: {}, b: {}, c: {}, d: {} } });
      assert.equal(tooMany.code, grpc.status.INVALID_ARGUMENT);
      assert.match(tooMany.details, /too many transaction filters: 4 \(at most 3\)/);
      const keys = await endsWith({ transactions: { a: { accountRequired: [1, 2, 3, 4, 5].map((i) => testKey58(i)) } } });
      assert.equal(keys.code, grpc.status.INVALID_ARGUMENT);
      assert.match(keys.details, /filter "a" account_required has 5 keys \(at most 4\)/);
      const name = await endsWith({ transactions: { 'much-too-long': {} } });
      assert.equal(name.code, grpc.status.INVALID_ARGUMENT);
      assert.match(name.details, /filter name "much-too-long" is 13 characters \(at most 8\)/);
    });

    it('more than maxFilterUpdatesPerSec filter updates → RESOURCE_EXHAUSTED subscribe_rate_limit (details and trailers)', async () => {
      const c = StreamClient.open(f.address);
      for (let i = 0; i < 6; i++) c.send({ transactions: { a: { accountInclude: [testKey58(i)] } } });
      const s = await c.waitForEnd(5000);
      assert.equal(s.code, grpc.status.RESOURCE_EXHAUSTED);
      assert.match(s.details, /subscribe_rate_limit/);
      assert.deepEqual(s.metadata.get('x-error-reason'), ['subscribe_rate_limit']);
      const bin = s.metadata.get('grpc-status-details-bin')[0];
      assert.ok(Buffer.isBuffer(bin) && bin.includes(Buffer.from('subscribe_rate_limit')) && bin.includes(Buffer.from('google.rpc.ErrorInfo')));
    });

    it('pings do not count as filter updates', async () => {
      const c = StreamClient.open(f.address);
      c.send({ transactions: { a: {} } });
      for (let i = 1; i <= 60; i++) c.send({ pingId: i });
      await c.waitFor(isPong(60));
      assert.equal(c.status, undefined);
      await c.close();
    });

    it('close() ends open streams with UNAVAILABLE', async () => {
      const g = await startTestFanout();
      const c = StreamClient.open(g.address);
      await sync(c, 1);
      await g.close();
      const s = await c.waitForEnd(5000);
      assert.equal(s.code, grpc.status.UNAVAILABLE);
    });
  });
}

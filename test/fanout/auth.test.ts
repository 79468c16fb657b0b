import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { EmbeddedBus } from '../../bus/embedded';
import { projectRentals, rentalsFromList } from '../../bus/rental-registry';
import { TOPIC } from '../../bus/topics';
import { encodeRental, parseRental, rentalTombstone, type Rental } from '../../bus/topics/rentals';
import { peerAddress } from '../../fanout/auth';
import { StreamClient } from '../support/stream-client';
import { quietLog, startTestFanout, type TestFanout } from './support';

// Authentication on the streaming endpoint (service.md Authentication/Streaming, Errors/Streaming), with real
// grpc-js clients over loopback.

const rental = (over: Partial<Rental>): Rental => parseRental({ id: 'r1', pps: 100, ...over });

function withToken(token: string): grpc.Metadata {
  const m = new grpc.Metadata();
  m.set('x-token', token);
  return m;
}

async function pingable(c: StreamClient): Promise<void> {
  c.send({ pingId: 9 });
  await c.waitFor((r) => r.pingId === 9);
}

describe('fanout auth: peer address parsing', () => {
  it('strips the port from every form grpc-js reports', () => {
    assert.equal(peerAddress('127.0.0.1:5000'), '127.0.0.1');
    assert.equal(peerAddress('::1:5000'), '::1');
    assert.equal(peerAddress('::ffff:10.0.0.1:443'), '::ffff:10.0.0.1');
    assert.equal(peerAddress('[2001:db8::1]:20202'), '2001:db8::1');
    assert.equal(peerAddress('ipv4:10.1.2.3:9'), '10.1.2.3');
  });
});

describe('fanout auth: token mode', () => {
  let f: TestFanout;
  before(async () => {
    const rentals = rentalsFromList([rental({ id: 'ok', tokens: ['tok-good-1234'], pps: 500 }), rental({ id: 'low', tokens: ['tok-low-1234'], pps: 10 })]);
    f = await startTestFanout({ auth: { mode: 'token', ppsRequirement: 100 } }, rentals);
  });
  after(() => f.close());

  it('no x-token → UNAUTHENTICATED', async () => {
    const c = StreamClient.open(f.address);
    const s = await c.waitForEnd();
    assert.equal(s.code, grpc.status.UNAUTHENTICATED);
    assert.match(s.details, /x-token metadata is required/);
  });

  it('unknown x-token → UNAUTHENTICATED, and the token is not echoed', async () => {
    const c = StreamClient.open(f.address, { metadata: withToken('tok-wrong-9999') });
    const s = await c.waitForEnd();
    assert.equal(s.code, grpc.status.UNAUTHENTICATED);
    assert.doesNotMatch(s.details, /tok-wrong/);
  });

  it('a rental below the PPS requirement → PERMISSION_DENIED "PPS limit requirement not met…"', async () => {
    const c = StreamClient.open(f.address, { service: 'ARPCService', metadata: withToken('tok-low-1234') });
    const s = await c.waitForEnd();
    assert.equal(s.code, grpc.status.PERMISSION_DENIED);
    assert.ok(s.details.startsWith('PPS limit requirement not met'), s.details);
  });

  it('a good token streams', async () => {
    const c = StreamClient.open(f.address, { metadata: withToken('tok-good-1234') });
    await pingable(c);
    await c.close();
  });
});

describe('fanout auth: ip mode', () => {
  it('a peer whose IP is not allowlisted fails immediately with PERMISSION_DENIED', async () => {
    const f = await startTestFanout({ auth: { mode: 'ip' } }, rentalsFromList([rental({ ips: ['10.9.9.9'] })]));
    try {
      const c = StreamClient.open(f.address);
      const t0 = Date.now();
      const s = await c.waitForEnd(3000);
      assert.equal(s.code, grpc.status.PERMISSION_DENIED);
      assert.match(s.details, /egress IP is not allowlisted/);
      assert.ok(Date.now() - t0 < 2000, 'immediately, without any request');
      assert.equal(f.fanout.stats().disconnects.ipNotAllowlisted, 1);
    } finally {
      await f.close();
    }
  });

  it('an allowlisted IP (loopback here, also in its IPv4-mapped spelling) streams', async () => {
    const f = await startTestFanout({ auth: { mode: 'ip', ppsRequirement: 1 } }, rentalsFromList([rental({ ips: ['::ffff:127.0.0.1'] })]));
    try {
      const c = StreamClient.open(f.address);
      await pingable(c);
      await c.close();
    } finally {
      await f.close();
    }
  });
});

describe('fanout auth: rentals projection drives open streams', () => {
  it('a tombstoned rental ends its open streams; a new rental is admitted without restart', async () => {
    const bus = new EmbeddedBus({ log: quietLog() });
    await bus.createTopics([{ name: TOPIC.rentals, partitions: 1, compacted: true }]);
    const r1 = rental({ id: 'a', tokens: ['tok-aaaa-1'] });
    await bus.produce(TOPIC.rentals, [encodeRental(r1)]);
    const projection = await projectRentals(bus, quietLog());
    const f = await startTestFanout({ auth: { mode: 'token' } }, projection, bus);
    try {
      const c = StreamClient.open(f.address, { metadata: withToken('tok-aaaa-1') });
      await pingable(c);
      await bus.produce(TOPIC.rentals, [encodeRental(rental({ id: 'b', tokens: ['tok-bbbb-1'] }))]);
      // the projection follows asynchronously
      for (let i = 0; i < 100 && projection.byToken('tok-bbbb-1') === undefined; i++) await new Promise((r) => setTimeout(r, 20));
      const d2 = StreamClient.open(f.address, { metadata: withToken('tok-bbbb-1') });
      await pingable(d2);
      await bus.produce(TOPIC.rentals, [rentalTombstone('a')]);
      const s = await c.waitForEnd(5000);
      assert.equal(s.code, grpc.status.UNAUTHENTICATED);
      await pingable(d2);
      await d2.close();
    } finally {
      await f.close();
      await projection.close();
      await bus.close();
    }
  });
});

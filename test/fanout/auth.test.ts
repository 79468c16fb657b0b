import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { EmbeddedBus } from '../../bus/embedded';
import { projectRentals, rentalsFromList } from '../../bus/rental-registry';
import { TOPIC } from '../../bus/topics';
import { encodeRental, parseRental, rentalTombstone, type Rental } from '../../bus/topics/rentals';
import { peerAddress } from '../../fanout/auth';
import { SubscribeResponse } from '../../proto/gen/arpc_pb';
import { StreamClient } from '../support/stream-client';
import { waitFor } from '../support/wait';
import { V2_SUBSCRIBE_PATH } from '../../proto/service-v2';
import { Ping as V2Ping, SubscribeRequest as V2Request, SubscribeUpdate as V2Update } from '../../proto/gen/stream_v2_pb';
import { RawConnection, RawStream } from './raw-client';
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

/** A raw HTTP/2 connection with what happened to it, in time order: GOAWAY received, the server's FIN, the close. */
class WatchedConnection {
  goaway: { code: number; at: number } | undefined;
  endAt: number | undefined;
  closeAt: number | undefined;
  private readonly pings = new Set<number>();

  private constructor(readonly conn: RawConnection) {
    const session = conn.session;
    session.on('goaway', (code: number) => (this.goaway ??= { code, at: Date.now() }));
    // The socket's 'end' is the server's FIN: the client's own graceful close (after a GOAWAY NO_ERROR) would wait
    // for its open streams, so it alone does not show that the server closed the connection.
    session.socket.once('end', () => (this.endAt ??= Date.now()));
    session.once('close', () => (this.closeAt ??= Date.now()));
  }

  static async connect(address: string): Promise<WatchedConnection> {
    return new WatchedConnection(await RawConnection.connect(address));
  }

  open(token: string): RawStream {
    return this.conn.open((m) => {
      const r = SubscribeResponse.deserializeBinary(m);
      if (r.hasPingId()) this.pings.add(r.getPingId());
    }, 'arpc.StreamService', { 'x-token': token });
  }

  /** A PING answered on `s`: the stream is open and served. */
  async pingable(s: RawStream, id: number): Promise<void> {
    s.send({ pingId: id });
    await waitFor(() => this.pings.has(id), 10_000, `ping ${id} answered`);
  }

  get closed(): boolean {
    return this.closeAt !== undefined;
  }
}

const PPS_PREFIX = 'PPS limit requirement not met';

// service.md Errors/Streaming: PERMISSION_DENIED "PPS limit requirement not met…" — "The server then closes the
// connection." Observed with a plain node:http2 client (raw-client.ts): the status, then GOAWAY, then the server
// ends the socket, whether the refusal comes when the stream opens or when a rental update lowers its PPS later.
for (const transport of ['h2', 'grpc-js'] as const) {
  describe(`fanout auth: a PPS refusal closes the connection, ${transport} server`, function () {
    const REQUIRED = 100;
    let bus: EmbeddedBus;
    let projection: Awaited<ReturnType<typeof projectRentals>>;
    let f: TestFanout;
    const open: WatchedConnection[] = [];
    const connect = async (): Promise<WatchedConnection> => {
      const c = await WatchedConnection.connect(f.address);
      open.push(c);
      return c;
    };

    before(async () => {
      bus = new EmbeddedBus({ log: quietLog() });
      await bus.createTopics([{ name: TOPIC.rentals, partitions: 1, compacted: true }]);
      await bus.produce(TOPIC.rentals, [
        encodeRental(rental({ id: 'ok', tokens: ['tok-ok-1234'], pps: 500 })),
        encodeRental(rental({ id: 'low', tokens: ['tok-low-1234'], pps: 10 })),
        encodeRental(rental({ id: 'down', tokens: ['tok-down-1234'], pps: 500 })),
        encodeRental(rental({ id: 'down-v2', tokens: ['tok-down-v2-1234'], pps: 500 })),
      ]);
      projection = await projectRentals(bus, quietLog());
      await waitFor(() => projection.byToken('tok-down-v2-1234') !== undefined, 10_000, 'rentals projected');
      f = await startTestFanout({ auth: { mode: 'token', ppsRequirement: REQUIRED }, transport }, projection, bus);
    });
    after(async () => {
      for (const c of open) c.conn.destroy();
      await f.close();
      await projection.close();
      await bus.close();
    });

    /** The refused stream's status, then GOAWAY NO_ERROR and the server's close of the connection within 1 s. */
    async function refusedThenClosed(c: WatchedConnection, s: RawStream, sibling: RawStream): Promise<void> {
      const st = await s.ended;
      const statusAt = Date.now();
      assert.equal(st.code, grpc.status.PERMISSION_DENIED, `status ${st.code} ${st.details}`);
      assert.ok(st.details.startsWith(PPS_PREFIX), st.details);
      assert.equal(st.trailers['x-error-reason'], 'pps_requirement');
      await waitFor(() => c.closed && c.endAt !== undefined, 5000, 'the connection closed by the server');
      assert.ok(c.goaway !== undefined, 'GOAWAY before the close');
      assert.equal(c.goaway.code, 0, 'GOAWAY NO_ERROR');
      assert.ok(c.goaway.at <= c.closeAt!, 'GOAWAY, then close');
      assert.ok(c.endAt! - statusAt < 1000, `server closed ${c.endAt! - statusAt} ms after the status`);
      // The other stream on that connection went with it (it had no status of its own).
      const sib = await sibling.ended;
      assert.notEqual(sib.code, grpc.status.OK);
    }

    it('at open: PERMISSION_DENIED "PPS limit requirement not met…", then GOAWAY and close within 1 s; a compliant stream on another connection goes on', async () => {
      const good = await connect();
      const gs = good.open('tok-ok-1234');
      await good.pingable(gs, 1);

      const bad = await connect();
      // A compliant stream first on the refused stream's connection: the client's own graceful close would wait
      // for it, so the connection can only close because the server closes it.
      const sibling = bad.open('tok-ok-1234');
      await bad.pingable(sibling, 2);
      const refused = bad.open('tok-low-1234');
      await refusedThenClosed(bad, refused, sibling);

      await good.pingable(gs, 3);
      assert.equal(good.goaway, undefined);
      assert.equal(good.closed, false);
      assert.equal(gs.status, undefined);
    });

    it('later: a rental update lowers its PPS below the requirement → the open stream gets the same status, then GOAWAY and close within 1 s; a compliant stream on another connection goes on', async () => {
      const good = await connect();
      const gs = good.open('tok-ok-1234');
      await good.pingable(gs, 11);

      const down = await connect();
      const sibling = down.open('tok-ok-1234');
      await down.pingable(sibling, 12);
      const ds = down.open('tok-down-1234');
      await down.pingable(ds, 13);

      await bus.produce(TOPIC.rentals, [encodeRental(rental({ id: 'down', tokens: ['tok-down-1234'], pps: REQUIRED - 1 }))]);
      await refusedThenClosed(down, ds, sibling);
      assert.ok((await ds.ended).details.includes(`${REQUIRED - 1} PPS`));

      await good.pingable(gs, 14);
      assert.equal(good.goaway, undefined);
      assert.equal(good.closed, false);
      assert.equal(gs.status, undefined);
    });

    // v2 (meridian.stream.v2) is served by both transports; its calls end through the same path as v1's.
    it('v2 at open: the same status, then GOAWAY and close within 1 s', async () => {
      const bad = await connect();
      const sibling = bad.open('tok-ok-1234');
      await bad.pingable(sibling, 31);
      const req = bad.conn.session.request({ ':method': 'POST', ':path': V2_SUBSCRIBE_PATH, 'content-type': 'application/grpc', te: 'trailers', 'x-token': 'tok-low-1234' }, { endStream: false });
      await refusedThenClosed(bad, new RawStream(req), sibling);
    });

    it('v2 later: a rental update lowers its PPS below the requirement → the open v2 stream gets the same status, then GOAWAY and close within 1 s', async () => {
      const down = await connect();
      const sibling = down.open('tok-ok-1234');
      await down.pingable(sibling, 41);
      let ponged = false;
      const req = down.conn.session.request({ ':method': 'POST', ':path': V2_SUBSCRIBE_PATH, 'content-type': 'application/grpc', te: 'trailers', 'x-token': 'tok-down-v2-1234' }, { endStream: false });
      const v2 = new RawStream(req, (m) => {
        if (V2Update.deserializeBinary(m).hasPong()) ponged = true;
      });
      const ping = new V2Ping();
      ping.setId(42);
      const r = new V2Request();
      r.setPing(ping);
      const body = Buffer.from(r.serializeBinary());
      const frame = Buffer.alloc(5 + body.length);
      frame.writeUInt32BE(body.length, 1);
      body.copy(frame, 5);
      req.write(frame);
      await waitFor(() => ponged, 10_000, 'the v2 stream is open and served');
      await bus.produce(TOPIC.rentals, [encodeRental(rental({ id: 'down-v2', tokens: ['tok-down-v2-1234'], pps: REQUIRED - 1 }))]);
      await refusedThenClosed(down, v2, sibling);
      assert.ok((await v2.ended).details.includes(`${REQUIRED - 1} PPS`));
    });

    it('other refusals keep the connection: UNAUTHENTICATED ends the stream only', async () => {
      const c = await connect();
      const sibling = c.open('tok-ok-1234');
      await c.pingable(sibling, 21);
      const s = c.open('tok-nobody-1234');
      const st = await s.ended;
      assert.equal(st.code, grpc.status.UNAUTHENTICATED);
      // A fence after the refusal on the same connection: a PING answered on its sibling.
      await c.pingable(sibling, 22);
      assert.equal(c.goaway, undefined);
      assert.equal(c.closed, false);
    });
  });
}

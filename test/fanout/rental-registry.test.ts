import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EmbeddedBus } from '../../bus/embedded';
import { normalizeIp, projectRentals, rentalsFromList, staticRentals } from '../../bus/rental-registry';
import { TOPIC } from '../../bus/topics';
import { encodeRental, parseRental, rentalTombstone, type Rental } from '../../bus/topics/rentals';
import { waitFor } from '../support/wait';
import { quietLog } from './support';

// The RentalRegistry: the static JSON file and the projection of the compacted rentals topic.

const rental = (id: string, over: Partial<Rental> = {}): Rental => parseRental({ id, ...over });

describe('rental registry: static file', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rentals-'));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('looks rentals up by IP (normalized), token, API key (any case) and dedicated path', () => {
    const file = path.join(dir, 'ok.json');
    fs.writeFileSync(file, JSON.stringify([
      { id: 'a', ips: ['10.0.0.1'], tokens: ['tok-a'], apiKeys: ['0F0E0D0C-0000-4000-8000-000000000001'], dedicatedPaths: ['/d/a'], pps: 5 },
      { id: 'b', ips: ['::FFFF:10.0.0.2'] },
    ]));
    const reg = staticRentals(file);
    assert.equal(reg.all().length, 2);
    assert.equal(reg.byIp('10.0.0.1')?.id, 'a');
    assert.equal(reg.byIp('::ffff:10.0.0.1')?.id, 'a');
    assert.equal(reg.byIp('10.0.0.2')?.id, 'b');
    assert.equal(reg.byToken('tok-a')?.id, 'a');
    assert.equal(reg.byApiKey('0f0e0d0c-0000-4000-8000-000000000001')?.id, 'a');
    assert.equal(reg.byDedicatedPath('/d/a')?.id, 'a');
    assert.equal(reg.byIp('10.0.0.3'), undefined);
    assert.equal(reg.byToken('tok-b'), undefined);
  });

  it('names the entry that does not parse, and refuses a non-array', () => {
    const bad = path.join(dir, 'bad.json');
    fs.writeFileSync(bad, JSON.stringify([{ id: 'a' }, { id: 'b', ips: 'x' }]));
    assert.throws(() => staticRentals(bad), /entry 1: ips must be an array of strings/);
    fs.writeFileSync(bad, '{"id":"a"}');
    assert.throws(() => staticRentals(bad), /expected a JSON array/);
    assert.throws(() => staticRentals(path.join(dir, 'missing.json')), /ENOENT/);
  });

  it('normalizeIp', () => {
    assert.equal(normalizeIp(' ::FFFF:1.2.3.4 '), '1.2.3.4');
    assert.equal(normalizeIp('2001:DB8::1'), '2001:db8::1');
    assert.equal(normalizeIp('::ffff'), '::ffff');
  });
});

describe('rental registry: projection of the rentals topic', () => {
  let bus: EmbeddedBus;
  beforeEach(async () => {
    bus = new EmbeddedBus({ log: quietLog() });
    await bus.createTopics([{ name: TOPIC.rentals, partitions: 1, compacted: true }]);
  });
  afterEach(() => bus.close());

  it('is caught up when it resolves: latest value per id wins, tombstones delete, bad values keep the old one', async () => {
    await bus.produce(TOPIC.rentals, [
      encodeRental(rental('a', { tokens: ['t-a-1'] })),
      encodeRental(rental('b', { tokens: ['t-b-1'] })),
      encodeRental(rental('a', { tokens: ['t-a-2'] })),
      rentalTombstone('b'),
      encodeRental(rental('c', { ips: ['10.1.1.1'] })),
      { key: Buffer.from('c'), value: Buffer.from('{not json') },
    ]);
    const p = await projectRentals(bus, quietLog());
    try {
      assert.deepEqual(p.all().map((r) => r.id).sort(), ['a', 'c']);
      assert.equal(p.byToken('t-a-1'), undefined);
      assert.equal(p.byToken('t-a-2')?.id, 'a');
      assert.equal(p.byToken('t-b-1'), undefined);
      assert.equal(p.byIp('10.1.1.1')?.id, 'c', 'the malformed record left c as it was');
    } finally {
      await p.close();
    }
  });

  it('resolves at once on an empty topic, then follows updates and tells listeners', async () => {
    const p = await projectRentals(bus, quietLog());
    try {
      assert.equal(p.all().length, 0);
      let changes = 0;
      const off = p.onChange(() => changes++);
      await bus.produce(TOPIC.rentals, [encodeRental(rental('x', { ips: ['10.2.2.2'] }))]);
      await waitFor(() => p.byIp('10.2.2.2') !== undefined, 3000, 'rental x projected', 10);
      assert.ok(changes >= 1);
      off();
      await bus.produce(TOPIC.rentals, [rentalTombstone('x')]);
      await waitFor(() => p.byIp('10.2.2.2') === undefined, 3000, 'rental x removed by its tombstone', 10);
    } finally {
      await p.close();
    }
  });

  it('falls back to a base registry for what the topic does not know; the topic wins on the same id', async () => {
    await bus.produce(TOPIC.rentals, [encodeRental(rental('both', { tokens: ['from-topic'] }))]);
    const base = rentalsFromList([rental('file-only', { tokens: ['from-file'] }), rental('both', { tokens: ['old-file'] })]);
    const p = await projectRentals(bus, quietLog(), base);
    try {
      assert.equal(p.byToken('from-file')?.id, 'file-only');
      assert.equal(p.byToken('from-topic')?.id, 'both');
      assert.deepEqual(p.all().map((r) => r.id).sort(), ['both', 'file-only']);
      assert.deepEqual(p.all().find((r) => r.id === 'both')?.tokens, ['from-topic']);
    } finally {
      await p.close();
    }
  });
});

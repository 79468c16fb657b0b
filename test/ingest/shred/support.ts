import fs from 'node:fs';
import { readCapture } from '../../../ingest/capture';
import { fixture } from '../../support/paths';

// The two shred captures and their goldens, read from the project's test/fixtures, loaded once.

export interface ExpectedFecSet {
  slot: number;
  fec_set_index: number;
  variants: string[];
  data_present: number;
  code_present: number;
  merkle_root: string;
  chained_merkle_root: string;
  leader_signature: string;
}

export interface ExpectedBatch {
  slot: number;
  first_shred: number;
  last_shred: number;
  payload_bytes: number;
  last_in_slot: boolean;
  num_entries: number;
  entries: Array<{ num_hashes: number; hash: string }>;
}

export interface Expected {
  leader: string;
  num_packets: number;
  fec_sets: ExpectedFecSet[];
  entry_batches: ExpectedBatch[];
}

export interface Capture {
  packets: Buffer[];
  expected: Expected;
  shredVersion: number;
  leader: Buffer | string;
}

const cache = new Map<string, unknown>();
function once<T>(key: string, load: () => T): T {
  if (!cache.has(key)) cache.set(key, load());
  return cache.get(key) as T;
}

function expectedOf(name: string): Expected {
  return JSON.parse(fs.readFileSync(fixture('shreds', name), 'utf8')) as Expected;
}

export const TURBINE_LEADER = 'FT9QgTVo375TgDAQusTgpsfXqTosCJLfrBpoVdcbnhtS';

export function turbine(): Capture {
  return once('turbine', () => ({
    packets: readCapture(fs.readFileSync(fixture('shreds', 'testnet-385970984-turbine.ar'))).packets,
    expected: expectedOf('testnet-385970984-turbine.expected.json'),
    shredVersion: 27350,
    leader: TURBINE_LEADER,
  }));
}

export interface DemoCapture extends Capture {
  seed: Buffer;
  publicKey: Buffer;
  entries: Buffer;
  chainedRoot: Buffer;
}

export function demo(): DemoCapture {
  return once('demo', () => {
    const key = fs.readFileSync(fixture('shreds', 'demo-shreds.key'));
    const expected = expectedOf('demo-shreds.expected.json');
    return {
      packets: readCapture(fs.readFileSync(fixture('shreds', 'demo-shreds.pcap'))).packets,
      expected,
      shredVersion: 6051,
      seed: key.subarray(0, 32),
      publicKey: key.subarray(32, 64),
      leader: key.subarray(32, 64),
      entries: fs.readFileSync(fixture('shreds', 'demo-shreds.entries.bin')),
      chainedRoot: Buffer.from(expected.fec_sets[0]!.chained_merkle_root, 'hex'),
    };
  });
}

/** A copy of a packet with `mutate` applied (fixtures stay untouched). */
export function mutated(p: Buffer, mutate: (b: Buffer) => void): Buffer {
  const b = Buffer.from(p);
  mutate(b);
  return b;
}

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { decodeSlotStatusRecord, encodeSlotStatusRecord, SlotStatusCode, SlotStatusSource } from '../../bus/topics/stream-slot-status';
import { blockId } from '../../ingest/entry/block-id';
import { decodeEntryBatch, type BatchDecode } from '../../ingest/entry/entries';
import { Pipeline } from '../../ingest/pipeline';
import type { DecodedTxn } from '../../proto/txn/decode';
import type { BlockFormat, SlotStatusEvent } from '../../ingest/slot-status';
import { fixture } from '../support/paths';
import { alpentick, fixtureTxs, footer, FOOTER, header, shredBlock, txBatch, updateParent } from './support/alpenglow';

// Alpenglow block components, judged as Agave judges them.
//
// 1. Component level: every byte string in test/fixtures/alpenglow/vectors.json (made and read back by the published
//    solana-entry 4.2.2 crate, test/fixtures/alpenglow/README.md) gets the crate's verdict here: accepted ones decode
//    to exactly the fields the crate read, and consume exactly the bytes it consumed; refused ones are refused.
// 2. Block level: whole blocks, shredded and pushed through the ingest pipeline, for each malformed form of issue 37
//    and the order rules of Agave's replay: a refused block ends SLOT_DEAD with a reason naming Agave's error, an
//    accepted one reaches SLOT_DECODED with its block id and delivers every transaction. Each case names the Agave
//    source that decides it (anza-xyz/agave; solana-entry 4.2.2 = entry/src/block_component.rs as published).

interface Vector {
  name: string;
  note: string;
  hex: string;
  crate_ok: boolean;
  crate_error?: string;
  consumed?: number;
  left_unread?: number;
  expected?: Record<string, unknown> & { kind: string };
}
interface Vectors {
  crates: Record<string, string>;
  components: Vector[];
  block_ids: Array<{ fec_set_roots: string[]; parent_slot: string; parent_block_id: string; block_id: string }>;
}

const V: Vectors = JSON.parse(fs.readFileSync(fixture('alpenglow', 'vectors.json'), 'utf8')) as Vectors;
const byName = new Map(V.components.map((v) => [v.name, v]));
const bytesOf = (name: string): Buffer => Buffer.from(byName.get(name)!.hex, 'hex');

/**
 * Our verdict on one data range of an Alpenglow block: accepted = the component Agave's crate accepts. Two
 * decoder outcomes differ in name only: bytes after the last entry are reported (trailing_garbage) but not refused
 * (the crate leaves them unread), and a zero count with nothing after it decodes as an empty batch that the block
 * rules refuse (block-rules.ts EmptyEntryBatch; the crate fails reading the marker that must follow).
 */
function accepts(d: BatchDecode): boolean {
  if (d.ok) return d.marker !== null || d.entries.length > 0;
  return d.reason === 'trailing_garbage';
}

const hex = (b: Buffer | null | undefined): string | null => (b == null ? null : b.toString('hex'));

function ours(d: BatchDecode): Record<string, unknown> {
  if (!d.ok || d.marker === null) return { kind: 'entry_batch', entries: d.entries.map((e) => ({ num_hashes: e.numHashes.toString(), hash: hex(e.hash), tx_count: e.txs.length })) };
  const m = d.marker;
  switch (m.kind) {
    case 'header':
    case 'update_parent':
      return { kind: m.kind, byte_len: m.byteLen, version: 1, parent_slot: m.parentSlot.toString(), parent_block_id: hex(m.parentBlockId) };
    case 'genesis_certificate':
      return { kind: m.kind, byte_len: m.byteLen, slot: m.slot.toString(), block_id: hex(m.blockId), bls_signature: hex(m.blsSignature), bitmap: hex(m.bitmap) };
    case 'footer': {
      const agg = (a: { signature: Buffer; bitmap: Buffer }) => ({ signature: hex(a.signature), bitmap: hex(a.bitmap) });
      const fc = m.finalCert;
      return {
        bank_hash: hex(m.bankHash),
        producer_time_nanos: m.producerTimeNanos.toString(),
        user_agent: hex(m.userAgent),
        final_cert: fc === null ? null : { slot: fc.slot.toString(), block_id: hex(fc.blockId), final_aggregate: agg(fc.finalAggregate), notar_aggregate: fc.notarAggregate === null ? null : agg(fc.notarAggregate) },
        skip_reward_cert: m.skipRewardCert === null ? null : { slot: m.skipRewardCert.slot.toString(), signature: hex(m.skipRewardCert.signature), bitmap: hex(m.skipRewardCert.bitmap) },
        notar_reward_cert: m.notarRewardCert === null ? null : { slot: m.notarRewardCert.slot.toString(), block_id: hex(m.notarRewardCert.blockId), signature: hex(m.notarRewardCert.signature), bitmap: hex(m.notarRewardCert.bitmap) },
        kind: 'footer',
        byte_len: m.byteLen,
        version: 1,
      };
    }
  }
}

describe('Alpenglow block components: the crate\u2019s verdicts (golden vectors from solana-entry)', () => {
  it(`were made by ${Object.entries(V.crates).map(([k, v]) => `${k} ${v}`).join(', ')}`, () => {
    assert.ok(V.components.length >= 40, 'vectors present');
  });

  for (const v of V.components) {
    it(`${v.name}: ${v.crate_ok ? 'accepted' : `refused (${v.crate_error})`} \u2014 ${v.note}`, () => {
      const bytes = Buffer.from(v.hex, 'hex');
      const d = decodeEntryBatch(bytes, 0n);
      assert.equal(accepts(d), v.crate_ok, `our verdict ${JSON.stringify(d.ok ? { ok: true } : { reason: d.reason, marker: d.markerReason })}`);
      if (!v.crate_ok) return;
      assert.deepEqual(ours(d), v.expected);
      // The bytes the crate consumed (what is left after them stays unread, as Agave's blockstore leaves it).
      assert.equal(d.ok ? d.consumed : (d as { at: number }).at, v.consumed);
    });
  }

  it('block ids: the double Merkle root over the FEC-set roots equals Agave\u2019s build_double_merkle_tree (ported in the generator, with the crate\u2019s hashv)', () => {
    assert.ok(V.block_ids.length >= 5);
    for (const g of V.block_ids) {
      const id = blockId(g.fec_set_roots.map((r) => Buffer.from(r, 'hex')), BigInt(g.parent_slot), Buffer.from(g.parent_block_id, 'hex'));
      assert.equal(id.toString('hex'), g.block_id, `${g.fec_set_roots.length} FEC sets`);
    }
  });
});

// ---- block level -------------------------------------------------------------------------------------------------

interface Run {
  statuses: SlotStatusEvent[];
  txs: DecodedTxn[];
}

function run(slot: bigint, components: Buffer[], opts: { parentOffset?: number; blockFormat?: BlockFormat } = {}): Run & { roots: Buffer[]; starts: number[] } {
  const b = shredBlock(slot, opts.parentOffset ?? 1, components);
  const statuses: SlotStatusEvent[] = [];
  const txs: DecodedTxn[] = [];
  const p = new Pipeline({ blockFormat: opts.blockFormat ?? 'alpenglow', sink: { batch: (o) => void txs.push(...o.txs), slot: () => {}, slotStatus: (e) => void statuses.push(e) } });
  let t = 1000;
  for (const s of b.shreds) p.push(s, t++);
  return { statuses, txs, roots: b.roots, starts: b.starts };
}

const SLOT = 459_653_000n; // first slot of a leader window (UpdateParent is only valid there)
const PARENT = SLOT - 1n;
const T = fixtureTxs();

function final(r: Run): SlotStatusEvent {
  const last = r.statuses[r.statuses.length - 1]!;
  return last;
}

function assertDead(r: Run, rule: string): void {
  const f = final(r);
  assert.equal(f.status, SlotStatusCode.dead, `expected dead (${rule}), got ${JSON.stringify(r.statuses.map((s) => [s.status, s.reason]))}`);
  assert.ok(f.reason.includes(rule), `reason ${JSON.stringify(f.reason)} names ${rule}`);
  assert.ok(!r.statuses.some((s) => s.status === SlotStatusCode.decoded), 'never decoded');
}

function assertDecoded(r: Run): SlotStatusEvent {
  const f = final(r);
  assert.equal(f.status, SlotStatusCode.decoded, `expected decoded, got ${JSON.stringify(r.statuses.map((s) => [s.status, s.reason]))}`);
  assert.ok(f.block !== undefined, 'an Alpenglow block announces its identity');
  return f;
}

const good = (mid: Buffer[] = [txBatch(T.slice(0, 3), 1)]): Buffer[] => [header(PARENT), ...mid, footer(), alpentick()];

describe('Alpenglow blocks: Agave\u2019s verdict, through the ingest pipeline', () => {
  it('a canonical block (Header, batches, Footer, alpentick): decoded, every transaction, block id over its FEC-set roots, footer announced', () => {
    const r = run(SLOT, good([txBatch(T.slice(0, 4), 1), txBatch(T.slice(4), 2)]));
    const f = assertDecoded(r);
    assert.equal(r.txs.length, T.length);
    assert.equal(f.block!.blockId.toString('hex'), blockId(r.roots, PARENT, Buffer.alloc(32, 0xa1)).toString('hex'));
    assert.equal(f.block!.parentSlot, PARENT);
    assert.equal(f.block!.updateParentFecSetIndex, null);
    assert.equal(f.block!.footer.bankHash.toString('hex'), FOOTER.bankHash.toString('hex'));
    assert.equal(f.block!.footer.producerTimeNanos, FOOTER.producerTimeNanos);
    assert.equal(f.block!.footer.userAgent.toString(), 'meridian-test/1');
  });

  // Each malformed component, in place of the header or the footer: solana-entry 4.2.2 refuses it
  // (wincode::deserialize::<BlockComponent>, its verdict in vectors.json), so replay marks the slot dead.
  const refusedHeader: Array<[string, string]> = [
    ['marker_variant_4', 'BlockMarkerV1 tag (u8, 4 variants)'],
    ['marker_variant_255', 'BlockMarkerV1 tag'],
    ['marker_version_0', 'VersionedBlockMarker tag (u16, only V1 = 1)'],
    ['marker_version_2', 'VersionedBlockMarker tag'],
    ['header_truncated', 'BlockHeaderV1 read past the data'],
    ['header_inner_version_0', 'VersionedBlockHeader tag (u8, only V1 = 1)'],
    ['header_inner_version_2', 'VersionedBlockHeader tag'],
  ];
  for (const [name, where] of refusedHeader) {
    it(`${name} as the header: dead (solana-entry 4.2.2 block_component.rs, ${where})`, () => {
      assert.equal(byName.get(name)!.crate_ok, false);
      const r = run(SLOT, [bytesOf(name), txBatch(T.slice(0, 2), 1), footer(), alpentick()]);
      assertDead(r, 'bad block component at shred 0');
      // Ingest still delivers what decodes; the dead status is what tells a client to drop the block's transactions.
      assert.equal(r.txs.length, 2);
    });
  }
  const refusedFooter: Array<[string, string]> = [
    ['footer_truncated', 'BlockFooterV1 read past the data'],
    ['footer_truncated_cert_tags', 'Option<…> tags read past the data'],
    ['footer_inner_version_2', 'VersionedBlockFooter tag (u8, only V1 = 1)'],
    ['footer_user_agent_past_payload', 'WincodeVec<u8, FixIntLen<u8>> user agent read past the data'],
    ['footer_option_tag_2', 'Option tag (0 or 1)'],
  ];
  for (const [name, where] of refusedFooter) {
    it(`${name} as the footer: dead (solana-entry 4.2.2 block_component.rs, ${where})`, () => {
      assert.equal(byName.get(name)!.crate_ok, false);
      const r = run(SLOT, [header(PARENT), txBatch(T.slice(0, 2), 1), bytesOf(name), alpentick()]);
      assertDead(r, 'bad block component');
      assert.equal(r.txs.length, 2, 'the transactions before it were delivered (and the block is dead)');
    });
  }
  for (const [name, where] of [
    ['update_parent_truncated', 'UpdateParentV1 read past the data'],
    ['update_parent_inner_version_2', 'VersionedUpdateParent tag (u8, only V1 = 1)'],
  ] as const) {
    it(`${name}: dead (solana-entry 4.2.2 block_component.rs, ${where})`, () => {
      const r = run(SLOT, [header(PARENT), txBatch(T.slice(0, 2), 1), bytesOf(name), txBatch(T.slice(2, 4), 2), footer(), alpentick()]);
      assertDead(r, 'bad block component');
    });
  }
  it('an entry count that overruns its data: dead, not just undecoded (the crate fails reading Vec<Entry>)', () => {
    assert.equal(byName.get('entry_count_overrun')!.crate_ok, false);
    const r = run(SLOT, [header(PARENT), bytesOf('entry_count_overrun'), footer(), alpentick()]);
    assertDead(r, 'bad_entry_count');
  });
  it('a genesis certificate cut short: dead', () => {
    const r = run(SLOT, [header(PARENT), bytesOf('genesis_truncated'), footer(), alpentick()]);
    assertDead(r, 'bad block component');
  });

  // Accepted by Agave although the old decoder refused them: the crate reads a marker field by field from the data
  // range and does not compare the byte length (solana-entry 4.2.2 LengthPrefixed derives SchemaRead: len, then
  // inner, no check); wincode::deserialize leaves what follows unread.
  for (const name of ['marker_byte_len_longer', 'marker_byte_len_shorter', 'marker_byte_len_zero', 'marker_trailing_bytes']) {
    it(`${name} as the header: accepted, every transaction delivered (solana-entry 4.2.2 LengthPrefixed: no length check)`, () => {
      assert.equal(byName.get(name)!.crate_ok, true);
      // The generator's header names parent slot 459,652,998: the shreds say the same (slot − 2).
      const r = run(SLOT, [bytesOf(name), txBatch(T.slice(0, 3), 1), footer(), alpentick()], { parentOffset: Number(SLOT - 459_652_998n) });
      assertDecoded(r);
      assert.equal(r.txs.length, 3);
    });
  }
  it('footer_trailing_bytes and entry_batch_trailing_bytes: accepted (wincode::deserialize leaves the tail unread)', () => {
    const r = run(SLOT, [header(PARENT), bytesOf('entry_batch_trailing_bytes'), txBatch(T.slice(0, 2), 1), bytesOf('footer_trailing_bytes'), alpentick()]);
    assertDecoded(r);
    assert.equal(r.txs.length, 2);
  });

  // Order rules: runtime/src/block_component_processor.rs BlockComponentStage (agave 421cff16).
  it('no Header: dead, MissingParentMarker (BlockComponentStage::on_entry_batch in PreParentMarker)', () => {
    assertDead(run(SLOT, [txBatch(T.slice(0, 2), 1), footer(), alpentick()]), 'MissingParentMarker');
  });
  it('an entry batch after the Footer: dead, EntryBatchAfterBlockFooter (on_entry_batch in AcceptingAlpentick)', () => {
    assertDead(run(SLOT, [header(PARENT), txBatch(T.slice(0, 2), 1), footer(), txBatch(T.slice(2, 4), 2), alpentick()]), 'EntryBatchAfterBlockFooter');
  });
  it('no Footer: dead, InvalidAlpentickPosition (on_alpentick in AcceptingEntriesOrFooter)', () => {
    assertDead(run(SLOT, [header(PARENT), txBatch(T.slice(0, 2), 1), alpentick()]), 'InvalidAlpentickPosition');
  });
  it('no final tick: dead, InvalidAlpentickPosition (on_final in AcceptingAlpentick)', () => {
    assertDead(run(SLOT, [header(PARENT), txBatch(T.slice(0, 2), 1), footer()]), 'InvalidAlpentickPosition');
  });
  it('two Footers: dead, MultipleBlockFooters (on_footer in AcceptingAlpentick)', () => {
    assertDead(run(SLOT, [header(PARENT), txBatch(T.slice(0, 2), 1), footer(), footer(), alpentick()]), 'MultipleBlockFooters');
  });
  it('two Headers: dead, MultipleBlockHeaders (on_header)', () => {
    assertDead(run(SLOT, [header(PARENT), header(PARENT), txBatch(T.slice(0, 2), 1), footer(), alpentick()]), 'MultipleBlockHeaders');
  });
  it('a Header naming another parent than the shreds: dead, HeaderParentSlotMismatch (on_header; blockstore validate_shred_parent)', () => {
    assertDead(run(SLOT, [header(PARENT - 2n), txBatch(T.slice(0, 2), 1), footer(), alpentick()]), 'HeaderParentSlotMismatch');
  });
  it('an empty entry batch: dead (solana-entry 4.2.2: a zero count must be followed by a marker)', () => {
    assert.equal(byName.get('empty_entry_batch')!.crate_ok, false);
    assertDead(run(SLOT, [header(PARENT), bytesOf('empty_entry_batch'), txBatch(T.slice(0, 2), 1), footer(), alpentick()]), 'EmptyEntryBatch');
  });
  it('a genesis certificate right after the Header is in order (GenesisCertificate stage); elsewhere dead, GenesisCertificateOutOfOrder', () => {
    assertDecoded(run(SLOT, [header(PARENT), bytesOf('genesis_certificate'), txBatch(T.slice(0, 2), 1), footer(), alpentick()]));
    assertDead(run(SLOT, [header(PARENT), txBatch(T.slice(0, 2), 1), bytesOf('genesis_certificate'), footer(), alpentick()]), 'GenesisCertificateOutOfOrder');
  });

  // UpdateParent (SIMD-0337): blockstore.rs ParentInfo and BlockComponentStage::on_update_parent.
  it('an UpdateParent: decoded on the new parent, its FEC set announced (the sets before it are discarded), block id over the new parent', () => {
    const up = PARENT - 2n;
    const r = run(SLOT, [header(PARENT), txBatch(T.slice(0, 3), 1), updateParent(up), txBatch(T.slice(3, 6), 2), footer(), alpentick()], { parentOffset: 1 });
    const f = assertDecoded(r);
    assert.equal(f.block!.parentSlot, up);
    assert.equal(f.block!.updateParentFecSetIndex, r.starts[2]);
    assert.equal(f.block!.blockId.toString('hex'), blockId(r.roots, up, Buffer.alloc(32, 0xb2)).toString('hex'));
    assert.equal(r.txs.length, 6, 'ingest delivers every transaction; the retraction names those before the UpdateParent');
    const sig0 = (t: Buffer) => t.subarray(1, 65).toString('hex'); // legacy/v0 wire: compact-u16 count 1, then the signature
    const listed = Array.from({ length: f.block!.discarded.length / 64 }, (_, i) => f.block!.discarded.subarray(i * 64, i * 64 + 64).toString('hex'));
    assert.deepEqual(listed, T.slice(0, 3).map(sig0), 'exactly the transactions before the UpdateParent are named as discarded');
    // Carried on stream.slot-status (extension 1), and read back; a tower-era record has none.
    const rec = decodeSlotStatusRecord(encodeSlotStatusRecord({ ...f, source: SlotStatusSource.shreds }))!;
    assert.deepEqual(rec.block, f.block);
    assert.equal(decodeSlotStatusRecord(encodeSlotStatusRecord({ ...f, block: undefined, source: SlotStatusSource.shreds }))!.block, undefined);
  });
  it('two UpdateParents: dead, MultipleUpdateParents (blockstore should_write_parent_info; not update-parent recoverable)', () => {
    assertDead(run(SLOT, [header(PARENT), txBatch(T.slice(0, 2), 1), updateParent(PARENT - 2n), txBatch(T.slice(2, 4), 2), updateParent(PARENT - 3n), footer(), alpentick()]), 'MultipleUpdateParents');
  });
  it('an UpdateParent outside the first slot of a leader window: dead, UpdateParentNotFirstInLeaderWindow', () => {
    assertDead(run(SLOT + 1n, [header(SLOT), txBatch(T.slice(0, 2), 1), updateParent(PARENT), footer(), alpentick()]), 'UpdateParentNotFirstInLeaderWindow');
  });
  it('an UpdateParent naming the header\u2019s parent: dead, UpdateParentMatchesBlockHeader', () => {
    assertDead(run(SLOT, [header(PARENT, Buffer.alloc(32, 0xb2)), txBatch(T.slice(0, 2), 1), updateParent(PARENT), footer(), alpentick()]), 'UpdateParentMatchesBlockHeader');
  });
  it('with an UpdateParent, errors before it are recoverable: no Header in front of it is accepted (is_update_parent_recoverable_replay_error)', () => {
    assertDecoded(run(SLOT, [txBatch(T.slice(0, 2), 1), updateParent(PARENT - 2n), txBatch(T.slice(2, 4), 2), footer(), alpentick()]));
  });

  it('SIMD-0504: one FEC set index with two Merkle roots kills the block (unchanged)', () => {
    const a = shredBlock(SLOT, 1, good());
    const b = shredBlock(SLOT, 1, [header(PARENT), txBatch(T.slice(3, 5), 9), footer(), alpentick()]);
    const statuses: SlotStatusEvent[] = [];
    const p = new Pipeline({ blockFormat: 'alpenglow', sink: { batch: () => {}, slot: () => {}, slotStatus: (e) => void statuses.push(e) } });
    let t = 0;
    for (const s of a.shreds.slice(0, 64 * 2)) p.push(s, t++);
    for (const s of b.shreds.slice(64, 64 * 2)) p.push(s, t++);
    assert.ok(statuses.some((s) => s.status === SlotStatusCode.dead && s.reason.includes('equivocation')));
  });

  it('tower-era blocks are untouched in auto mode: a block of entry batches only is decoded without an identity', () => {
    const r = run(100n, [txBatch(T.slice(0, 2), 1), txBatch(T.slice(2, 4), 2)], { blockFormat: 'auto' });
    assert.equal(final(r).status, SlotStatusCode.decoded);
    assert.equal(final(r).block, undefined);
    assert.equal(r.txs.length, 4);
  });
  it('auto mode: a block that starts with a marker is judged as Alpenglow, and so is every later block', () => {
    const statuses: SlotStatusEvent[] = [];
    const p = new Pipeline({ sink: { batch: () => {}, slot: () => {}, slotStatus: (e) => void statuses.push(e) } });
    let t = 0;
    for (const s of shredBlock(SLOT, 1, good()).shreds) p.push(s, t++);
    for (const s of shredBlock(SLOT + 1n, 1, [txBatch(T.slice(0, 2), 1), footer(), alpentick()]).shreds) p.push(s, t++);
    const last = (slot: bigint) => statuses.filter((s) => s.slot === slot).pop()!;
    assert.equal(last(SLOT).status, SlotStatusCode.decoded);
    assert.equal(last(SLOT + 1n).status, SlotStatusCode.dead);
    assert.ok(last(SLOT + 1n).reason.includes('MissingParentMarker'));
  });
});

import assert from 'node:assert/strict';
import { PARSE_REJECTS, type ParseReject } from '../../../ingest/shred/drop-reasons';
import {
  CODE_NUM_CODING_OFF, CODE_NUM_DATA_OFF, CODE_POSITION_OFF, DATA_FLAGS_OFF, DATA_PARENT_OFFSET_OFF, DATA_SIZE_OFF,
  FEC_SET_INDEX_OFF, INDEX_OFF, SLOT_OFF, VARIANT_OFF, VERSION_OFF,
} from '../../../ingest/shred/layout';
import { parseShred, type ShredView } from '../../../ingest/shred/parse';
import { demo, mutated, turbine } from './support';

function view(p: Buffer, version: number | null = null): ShredView {
  const v = parseShred(p, version);
  assert.ok(typeof v !== 'string', `expected a view, got ${String(v)}`);
  return v;
}

describe('parseShred', () => {
  // Shreds of each live variant, from the real captures.
  const d = demo();
  const t = turbine();
  const byVariant = (ps: Buffer[], variant: number): Buffer => ps.find((p) => p[VARIANT_OFF] === variant)!;
  const data96 = byVariant(d.packets, 0x96); // demo slot 0, index 0
  const dataB6 = byVariant(d.packets, 0xb6);
  const code66 = byVariant(d.packets, 0x66);
  const code76 = byVariant(d.packets, 0x76);
  const real96 = t.packets.find((p) => p[VARIANT_OFF] === 0x96 && p.readUInt32LE(INDEX_OFF) % 32 === 5)!; // slot 385970984

  it('accepts every packet of both captures, with their shred versions', () => {
    assert.equal(d.packets.length, 512);
    assert.equal(t.packets.length, 307);
    for (const p of d.packets) view(p, 6051);
    for (const p of t.packets) view(p, 27350);
  });

  it('reads the headers of each variant', () => {
    const a = view(data96);
    assert.deepEqual([a.isData, a.resigned, a.slot, a.index, a.fecSetIndex, a.leafIndex, a.size, a.flags, a.shredVersion], [true, false, 0, 0, 0, 0, 1051, 0, 6051]);
    const b = view(dataB6);
    assert.deepEqual([b.isData, b.resigned, b.fecSetIndex, b.size, b.layout.proofOff, b.layout.retransmitterOff], [true, true, 224, 987, 1019, 1139]);
    const c = view(code66);
    assert.deepEqual([c.isData, c.resigned, c.leafIndex, c.layout.shardOff, c.layout.shardSz, c.layout.proofOff], [false, false, 32, 89, 987, 1108]);
    const e = view(code76);
    assert.deepEqual([e.isData, e.resigned, e.layout.shardSz, e.layout.proofOff, e.layout.retransmitterOff], [false, true, 923, 1044, 1164]);
    const r = view(real96);
    assert.deepEqual([r.slot, r.index % 32, r.leafIndex, r.parentOffset > 0], [385970984, 5, 5, true]);
  });

  it('truncates longer payloads (a repair nonce) to the variant size, without copying', () => {
    const long = Buffer.concat([code66, Buffer.from([1, 2, 3, 4])]);
    const v = view(long);
    assert.equal(v.buf.length, 1228);
    assert.equal(v.buf.buffer, long.buffer);
    assert.equal(view(Buffer.concat([data96, Buffer.alloc(25)])).buf.length, 1203);
  });

  // One case per rule, each built by mutating a real shred. The last test checks that together they
  // produce every parse reject reason, so a rule without a case fails loudly.
  const produced = new Set<ParseReject>();
  const cases: Array<[string, Buffer, ParseReject, number | null]> = [
    ['empty packet', Buffer.alloc(0), 'short', null],
    ['shorter than the common header', data96.subarray(0, 82), 'short', null],
    ['data shred one byte short', data96.subarray(0, 1202), 'short', null],
    ['code shred one byte short', code66.subarray(0, 1227), 'short', null],
    ['legacy data 0xA5', mutated(data96, (b) => { b[VARIANT_OFF] = 0xa5; }), 'legacy_variant', null],
    ['legacy code 0x5A', mutated(code66, (b) => { b[VARIANT_OFF] = 0x5a; }), 'legacy_variant', null],
    ['unchained data 0x86', mutated(data96, (b) => { b[VARIANT_OFF] = 0x86; }), 'unchained_merkle', null],
    ['unchained code 0x46', mutated(code66, (b) => { b[VARIANT_OFF] = 0x46; }), 'unchained_merkle', null],
    ['resigned without chained 0xA6', mutated(data96, (b) => { b[VARIANT_OFF] = 0xa6; }), 'unknown_variant', null],
    ['type nibble 0x1_', mutated(data96, (b) => { b[VARIANT_OFF] = 0x16; }), 'unknown_variant', null],
    ['proof depth 5', mutated(data96, (b) => { b[VARIANT_OFF] = 0x95; }), 'proof_depth', null],
    ['proof depth 7 on code', mutated(code76, (b) => { b[VARIANT_OFF] = 0x77; }), 'proof_depth', null],
    ['other shred_version', data96, 'shred_version', 50093],
    ['slot beyond 2^53', mutated(data96, (b) => { b.writeUInt32LE(0x0020_0000, SLOT_OFF + 4); }), 'slot_range', null],
    ['fec_set_index not a multiple of 32', mutated(real96, (b) => { b.writeUInt32LE(b.readUInt32LE(FEC_SET_INDEX_OFF) + 1, FEC_SET_INDEX_OFF); }), 'fec_index', null],
    ['index beyond its set', mutated(data96, (b) => { b.writeUInt32LE(32, INDEX_OFF); }), 'fec_index', null],
    ['code index below its set', mutated(code66, (b) => { b.writeUInt32LE(32, FEC_SET_INDEX_OFF); }), 'fec_index', null],
    ['index at 32768', mutated(data96, (b) => { b.writeUInt32LE(32768, INDEX_OFF); b.writeUInt32LE(32768, FEC_SET_INDEX_OFF); }), 'index_range', null],
    ['code says 31 data', mutated(code66, (b) => { b.writeUInt16LE(31, CODE_NUM_DATA_OFF); }), 'code_header', null],
    ['code says 33 coding', mutated(code66, (b) => { b.writeUInt16LE(33, CODE_NUM_CODING_OFF); }), 'code_header', null],
    ['code position 32', mutated(code66, (b) => { b.writeUInt16LE(32, CODE_POSITION_OFF); }), 'code_header', null],
    ['DATA_COMPLETE mid-set', mutated(data96, (b) => { b[DATA_FLAGS_OFF] = 0x40; }), 'data_complete_position', null],
    ['LAST_IN_SLOT mid-set', mutated(data96, (b) => { b[DATA_FLAGS_OFF] = 0xc0; }), 'last_in_slot_position', null],
    ['0x80 without DATA_COMPLETE on a set end', mutated(d.packets[31]!, (b) => { b[DATA_FLAGS_OFF] = 0x80; }), 'last_in_slot_position', null],
    ['size below the header', mutated(data96, (b) => { b.writeUInt16LE(87, DATA_SIZE_OFF); }), 'size_field', null],
    ['size past the chained buffer', mutated(data96, (b) => { b.writeUInt16LE(1052, DATA_SIZE_OFF); }), 'size_field', null],
    ['size past the resigned buffer', mutated(dataB6, (b) => { b.writeUInt16LE(988, DATA_SIZE_OFF); }), 'size_field', null],
    ['parent after the slot', mutated(real96, (b) => { b.writeUInt32LE(1, SLOT_OFF); b.writeUInt32LE(0, SLOT_OFF + 4); b.writeUInt16LE(2, DATA_PARENT_OFFSET_OFF); }), 'parent_offset', null],
    ['slot > 0 naming itself parent', mutated(real96, (b) => { b.writeUInt16LE(0, DATA_PARENT_OFFSET_OFF); }), 'parent_offset', null],
  ];
  for (const [name, packet, reason, version] of cases) {
    it(`rejects ${name} as '${reason}'`, () => {
      const r = parseShred(packet, version);
      assert.equal(r, reason);
      produced.add(reason);
    });
  }

  it('keeps edge values that are legal', () => {
    view(mutated(data96, (b) => { b.writeUInt16LE(88, DATA_SIZE_OFF); })); // empty shred
    view(mutated(d.packets[31]!, (b) => { b[DATA_FLAGS_OFF] = 0xc0 | 63; })); // LAST_IN_SLOT + tick 63 on a set end
    view(mutated(data96, (b) => { b.writeUInt32LE(32736, FEC_SET_INDEX_OFF); b.writeUInt32LE(32767, INDEX_OFF); }));
    view(mutated(dataB6, (b) => { b.writeUInt16LE(987, DATA_SIZE_OFF); }));
    assert.equal(view(data96, 6051).shredVersion, 6051);
  });

  it('covers every parse reject reason with a case', () => {
    assert.equal(produced.size, PARSE_REJECTS.length, `missing: ${PARSE_REJECTS.filter((r) => !produced.has(r)).join(', ')}`);
  });

  it('leaves the version unchecked when none is configured', () => {
    assert.equal(view(data96, null).shredVersion, 6051);
    assert.equal(view(mutated(data96, (b) => { b.writeUInt16LE(1, VERSION_OFF); }), null).shredVersion, 1);
  });
});

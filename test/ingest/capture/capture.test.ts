import assert from 'node:assert/strict';
import fs from 'node:fs';
import { CaptureError, detectFormat, readCapture, writePcap, writeU64lp } from '../../../ingest/capture';
import { fixture } from '../../support/paths';

const packets = [Buffer.from('first'), Buffer.alloc(0), Buffer.alloc(1228, 0xab), Buffer.from('odd')];

/** An ar member header: 16 name, 12 mtime, 6 uid, 6 gid, 8 mode, 10 size, "`\n". */
function arMember(name: string, data: Buffer): Buffer {
  const hdr = Buffer.from(`${name.padEnd(16)}${'0'.padEnd(12)}${'0'.padEnd(6)}${'0'.padEnd(6)}${'100644'.padEnd(8)}${String(data.length).padEnd(10)}\`\n`, 'latin1');
  assert.equal(hdr.length, 60);
  return Buffer.concat([hdr, data, data.length % 2 === 1 ? Buffer.from('\n') : Buffer.alloc(0)]);
}

describe('capture readers', () => {
  it('detects and reads the ar and pcap fixtures', () => {
    const ar = readCapture(fs.readFileSync(fixture('shreds', 'testnet-385970984-turbine.ar')));
    assert.equal(ar.format, 'ar');
    assert.equal(ar.packets.length, 307);
    assert.ok(ar.packets.every((p) => p.length === 1203 || p.length === 1228));
    const pcap = readCapture(fs.readFileSync(fixture('shreds', 'demo-shreds.pcap')));
    assert.equal(pcap.format, 'pcap');
    assert.equal(pcap.packets.length, 512);
    assert.equal(pcap.skipped, 0);
    assert.equal(pcap.timesMs!.length, 512);
    assert.deepEqual([...new Set(pcap.packets.map((p) => p.length))].sort(), [1203, 1228]);
  });

  it('round-trips u64lp, and takes an empty file as an empty u64lp capture', () => {
    const buf = writeU64lp(packets);
    assert.equal(detectFormat(buf), 'u64lp');
    const r = readCapture(buf);
    assert.equal(r.packets.length, packets.length);
    r.packets.forEach((p, i) => assert.ok(p.equals(packets[i]!)));
    assert.deepEqual(readCapture(Buffer.alloc(0)).packets, []);
  });

  it('round-trips pcap through Ethernet/IPv4/UDP frames with a valid IPv4 checksum', () => {
    const buf = writePcap(packets, { dstPort: 8002, timesMs: [1000.5, 2000, 3000, 4000.25] });
    const r = readCapture(buf);
    assert.equal(r.format, 'pcap');
    assert.equal(r.packets.length, packets.length);
    r.packets.forEach((p, i) => assert.ok(p.equals(packets[i]!)));
    assert.deepEqual(r.timesMs, [1000.5, 2000, 3000, 4000.25]);
    // Header checksum: the one's-complement sum over the 20 header bytes (checksum included) is 0xffff.
    const ip = 24 + 16 + 14;
    let sum = 0;
    for (let i = 0; i < 20; i += 2) sum += buf.readUInt16BE(ip + i);
    while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
    assert.equal(sum, 0xffff);
    assert.equal(buf.readUInt16BE(ip + 20 + 2), 8002);
  });

  it('reads VLAN-tagged frames, big-endian and nanosecond files; skips and counts non-UDP frames and fragments', () => {
    const one = writePcap([Buffer.from('payload')], { dstPort: 1 });
    const frame = one.subarray(24 + 16);
    const vlan = Buffer.concat([frame.subarray(0, 12), Buffer.from([0x81, 0x00, 0x00, 0x05]), frame.subarray(12)]);
    const tcp = Buffer.from(frame);
    tcp[14 + 9] = 6;
    const frag = Buffer.from(frame);
    frag[14 + 6] = 0x20; // more fragments
    const arp = Buffer.from(frame);
    arp.writeUInt16BE(0x0806, 12);
    const frames = [vlan, tcp, frag, arp, frame];
    const recs = frames.map((f) => {
      const h = Buffer.alloc(16);
      h.writeUInt32LE(f.length, 8);
      h.writeUInt32LE(f.length, 12);
      return Buffer.concat([h, f]);
    });
    const r = readCapture(Buffer.concat([one.subarray(0, 24), ...recs]));
    assert.equal(r.packets.length, 2);
    assert.ok(r.packets.every((p) => p.toString() === 'payload'));
    assert.equal(r.skipped, 3);

    // The same file written big-endian with the nanosecond magic.
    const be = Buffer.from(one);
    be.writeUInt32BE(0xa1b23c4d, 0);
    be.writeUInt16BE(2, 4);
    be.writeUInt16BE(4, 6);
    be.writeUInt32BE(0xffff, 16);
    be.writeUInt32BE(1, 20);
    be.writeUInt32BE(7, 24);
    be.writeUInt32BE(500_000, 28);
    be.writeUInt32BE(frame.length, 32);
    be.writeUInt32BE(frame.length, 36);
    const rb = readCapture(be);
    assert.equal(rb.packets[0]!.toString(), 'payload');
    assert.deepEqual(rb.timesMs, [7000.5]);
  });

  it('reads ar members with odd sizes, BSD names and a GNU name table', () => {
    const ar = Buffer.concat([
      Buffer.from('!<arch>\n'),
      arMember('//', Buffer.from('long-name.bin/\n')),
      arMember('a.bin/', Buffer.from('abc')),
      arMember('#1/8', Buffer.concat([Buffer.from('bsdname!'), Buffer.from('payload')])),
      arMember('c.bin/', Buffer.from('xy')),
    ]);
    const r = readCapture(ar);
    assert.equal(r.format, 'ar');
    assert.deepEqual(r.packets.map((p) => p.toString()), ['abc', 'payload', 'xy']);
  });

  it('reports truncated and malformed files with a CaptureError naming the offset', () => {
    const pcap = fs.readFileSync(fixture('shreds', 'demo-shreds.pcap'));
    const ar = fs.readFileSync(fixture('shreds', 'testnet-385970984-turbine.ar'));
    const u = writeU64lp(packets);
    const bad: Array<[string, () => unknown, RegExp]> = [
      ['pcap cut inside a frame', () => readCapture(pcap.subarray(0, pcap.length - 10)), /pcap capture: record length \d+ exceeds/],
      ['pcap cut inside a record header', () => readCapture(pcap.subarray(0, 24 + 16 + 1245 + 5)), /truncated record header/],
      ['pcap global header only partly there', () => readCapture(pcap.subarray(0, 10), 'pcap'), /truncated global header/],
      ['pcap of another link type', () => readCapture(Buffer.concat([pcap.subarray(0, 20), Buffer.from([0x71, 0, 0, 0])])), /unsupported link type 113/],
      ['ar cut inside a member', () => readCapture(ar.subarray(0, 500)), /ar capture: member size 1228 exceeds/],
      ['ar cut inside a member header', () => readCapture(ar.subarray(0, 8 + 30)), /truncated member header/],
      ['ar with a bad size field', () => readCapture(Buffer.concat([Buffer.from('!<arch>\n'), Buffer.from(arMember('x/', Buffer.from('ab')).toString('latin1').replace('2         `', 'z2        `'), 'latin1')])), /bad member size/],
      ['ar read without its magic', () => readCapture(u, 'ar'), /missing/],
      ['u64lp cut inside a packet', () => readCapture(u.subarray(0, u.length - 1)), /u64lp capture: packet length 3 exceeds/],
      ['u64lp cut inside a length', () => readCapture(u.subarray(0, 4), 'u64lp'), /truncated length prefix/],
      ['u64lp with a wild length', () => readCapture(Buffer.from([0, 0, 0, 0, 0, 0, 0, 0x7f, 1, 2]), 'u64lp'), /exceeds/],
    ];
    for (const [name, read, msg] of bad) assert.throws(read, (e: unknown) => e instanceof CaptureError && msg.test(e.message), name);
  });
});

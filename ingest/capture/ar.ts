// Unix ar archive, one member per packet (Firedancer's shred fixtures use it).
//
//   "!<arch>\n"                                     8-byte global magic
//   per member:
//   0   16  name    ("000.bin/" GNU, "#1/NN" BSD: NN name bytes open the data)
//   16  12  mtime   ┐
//   28   6  uid     │ decimal ASCII, space padded; ignored
//   34   6  gid     │
//   40   8  mode    ┘ (octal)
//   48  10  size    decimal ASCII: data bytes (BSD: name included)
//   58   2  "`\n"   header terminator
//   60      data, then one '\n' pad byte when size is odd (members start on even offsets)
// GNU's symbol table ("/") and long-name table ("//") are skipped: they are not packets.

import { CaptureError } from './errors';

export const AR_MAGIC = Buffer.from('!<arch>\n', 'latin1');
const HDR_SZ = 60;
const NAME_OFF = 0;
const NAME_SZ = 16;
const SIZE_OFF = 48;
const SIZE_SZ = 10;
const FMAG_OFF = 58;
const FMAG = '`\n';
const BSD_NAME_PREFIX = '#1/';

function field(buf: Buffer, off: number, sz: number): string {
  return buf.toString('latin1', off, off + sz).trimEnd();
}

export function readAr(buf: Buffer): Buffer[] {
  if (buf.length < AR_MAGIC.length || !buf.subarray(0, AR_MAGIC.length).equals(AR_MAGIC)) throw new CaptureError('ar', 0, 'missing "!<arch>\\n" magic');
  const packets: Buffer[] = [];
  let off = AR_MAGIC.length;
  while (off < buf.length) {
    if (buf.length - off < HDR_SZ) throw new CaptureError('ar', off, `truncated member header (${buf.length - off} of ${HDR_SZ} bytes)`);
    if (buf.toString('latin1', off + FMAG_OFF, off + FMAG_OFF + FMAG.length) !== FMAG) throw new CaptureError('ar', off, 'bad member header terminator');
    const sizeText = field(buf, off + SIZE_OFF, SIZE_SZ);
    if (!/^\d+$/.test(sizeText)) throw new CaptureError('ar', off, `bad member size ${JSON.stringify(sizeText)}`);
    const size = Number(sizeText);
    const dataOff = off + HDR_SZ;
    if (size > buf.length - dataOff) throw new CaptureError('ar', off, `member size ${size} exceeds the ${buf.length - dataOff} bytes left`);
    const name = field(buf, off + NAME_OFF, NAME_SZ);
    let data = buf.subarray(dataOff, dataOff + size);
    if (name.startsWith(BSD_NAME_PREFIX)) {
      const nameLen = Number(name.slice(BSD_NAME_PREFIX.length));
      if (!Number.isInteger(nameLen) || nameLen < 0 || nameLen > size) throw new CaptureError('ar', off, `bad BSD name length in ${JSON.stringify(name)}`);
      data = data.subarray(nameLen);
    }
    if (name !== '/' && name !== '//' && name !== '/SYM64/' && name !== '__.SYMDEF' && name !== '__.SYMDEF SORTED') packets.push(data);
    // The pad byte may be missing after the last member; that is not a truncation.
    off = dataOff + size + (size & 1);
  }
  return packets;
}

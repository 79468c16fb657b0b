import { sign, type Keypair } from '../../base/keypair';

// A signed legacy System Program transfer (the faucet's airdrops):
//   signatures: compact-u16 1 | sig[64]
//   message:    header (1, 0, 1) | compact-u16 3 | from | to | system program | blockhash[32]
//               | compact-u16 1 | { program 2, compact-u16 2, [0, 1], compact-u16 12, u32 2 (Transfer), u64 lamports }

const SYSTEM_PROGRAM = Buffer.alloc(32);
const TRANSFER = 2;

export function transferTx(from: Keypair, to: Buffer, lamports: bigint, blockhash: Buffer): Buffer {
  const data = Buffer.alloc(12);
  data.writeUInt32LE(TRANSFER, 0);
  data.writeBigUInt64LE(lamports, 4);
  const message = Buffer.concat([Buffer.from([1, 0, 1, 3]), from.publicKey, to, SYSTEM_PROGRAM, blockhash, Buffer.from([1, 2, 2, 0, 1, data.length]), data]);
  return Buffer.concat([Buffer.from([1]), sign(from, message), message]);
}

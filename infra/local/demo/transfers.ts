import crypto from 'node:crypto';
import { sign, type Keypair } from '../../base/keypair';

// Real, signed legacy System Program transfers (demo traffic, tests, the loop bench). Callers vary the amount
// under one blockhash so signatures are unique (the chain and the fanout's duplicate filter both key on them).
//
//   signatures: compact-u16 count (1) | sig[64]
//   message:    header (1, 0, 1) | compact-u16 3 | payer | recipient | system program | blockhash[32]
//               | compact-u16 1 | { program 2, compact-u16 2, [0, 1], compact-u16 12, u32 2 (Transfer), u64 lamports }
//   with a tip: compact-u16 4 | payer | recipient | tip account | system program | blockhash[32]
//               | compact-u16 2 | the transfer (program 3, [0, 1]) | { program 3, [0, 2], Transfer of the tip }
// A tip is what the submission service asks of every transaction: one top-level System transfer to a static
// tip account.

export const SYSTEM_PROGRAM = Buffer.alloc(32);
const TRANSFER = 2;

export interface Tip {
  account: Buffer;
  lamports: bigint;
}

function transferData(lamports: bigint): Buffer {
  const data = Buffer.alloc(12);
  data.writeUInt32LE(TRANSFER, 0);
  data.writeBigUInt64LE(lamports, 4);
  return data;
}

export function transferMessage(payer: Buffer, recipient: Buffer, lamports: bigint, blockhash: Buffer, tip?: Tip): Buffer {
  const data = transferData(lamports);
  if (tip !== undefined) {
    const tipData = transferData(tip.lamports);
    return Buffer.concat([
      Buffer.from([1, 0, 1, 4]),
      payer,
      recipient,
      tip.account,
      SYSTEM_PROGRAM,
      blockhash,
      Buffer.from([2, 3, 2, 0, 1, data.length]),
      data,
      Buffer.from([3, 2, 0, 2, tipData.length]),
      tipData,
    ]);
  }
  return Buffer.concat([
    Buffer.from([1, 0, 1, 3]),
    payer,
    recipient,
    SYSTEM_PROGRAM,
    blockhash,
    Buffer.from([1, 2, 2, 0, 1, data.length]),
    data,
  ]);
}

export function signedTransfer(payer: Keypair, recipient: Buffer, lamports: bigint, blockhash: Buffer = crypto.randomBytes(32), tip?: Tip): Buffer {
  const message = transferMessage(payer.publicKey, recipient, lamports, blockhash, tip);
  return Buffer.concat([Buffer.from([1]), sign(payer, message), message]);
}

/** The 64 bytes of signatures[0] of a one-signature wire transaction (its id for getTransaction and the stream). */
export function firstSignature(tx: Buffer): Buffer {
  return tx.subarray(1, 65);
}

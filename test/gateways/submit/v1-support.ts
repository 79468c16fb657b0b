import crypto from 'node:crypto';
import { keypairFromSeed, sign, type Keypair } from '../../../infra/base/keypair';
import { encodeV1Message, encodeV1Transaction } from '../../../proto/txn/v1';
import { MIN_TIP, TIP_ACCOUNTS } from './support';

// v1 transactions for the submission tests, built with the project's v1 encoder and signed with node:crypto (no
// published JS client writes v1 yet; the encoder itself is checked against the crate-made vectors).

const SYSTEM = Buffer.alloc(32);

/** A signed v1 transfer of `tip` lamports to a tip account, `pad` bytes of memo-like data in a 2nd instruction. */
export function v1TipTx(o: { payer?: Keypair; tip?: number | null; pad?: number; breakSig?: boolean; blockhash?: Buffer } = {}): Buffer {
  const payer = o.payer ?? keypairFromSeed(crypto.randomBytes(32));
  const tipAccount = TIP_ACCOUNTS[0]!.toBuffer();
  const other = crypto.randomBytes(32);
  const data = Buffer.alloc(12);
  data.writeUInt32LE(2, 0);
  data.writeBigUInt64LE(BigInt(o.tip ?? MIN_TIP), 4);
  const ixs = [];
  if (o.tip !== null) ixs.push({ programIdIndex: 3, accounts: [0, 1], data });
  if ((o.pad ?? 0) > 0) ixs.push({ programIdIndex: 2, accounts: [0], data: Buffer.alloc(o.pad!, 7) });
  const msg = encodeV1Message({
    numRequiredSignatures: 1,
    numReadonlySignedAccounts: 0,
    numReadonlyUnsignedAccounts: 2,
    // v1 has no ComputeBudget defaults: an unset loaded-accounts limit is 0 bytes, so ask for 1 MiB.
    config: { computeUnitLimit: 200_000, priorityFee: 5000n, loadedAccountsDataSizeLimit: 1 << 20 },
    recentBlockhash: o.blockhash ?? crypto.randomBytes(32),
    accountKeys: [payer.publicKey, tipAccount, other, SYSTEM],
    instructions: ixs,
  });
  const sig = sign(payer, msg);
  if (o.breakSig === true) sig[5]! ^= 1;
  return encodeV1Transaction(msg, [sig]);
}


import bs58 from 'bs58';
import type { TxFields } from '../../../proto/tx-fields';

// Fee of a transaction as the runtime charges it (agave's FeeStructure with the compute-budget program):
//   fee = 5000 lamports × signatures + ceil(compute_unit_price µlamports × compute_unit_limit / 1e6)
// The limit is SetComputeUnitLimit's, else 200,000 per non-builtin instruction and 3,000 per builtin one,
// capped at 1.4M. (Precompile signatures — ed25519/secp256k1 instructions — are not counted here.)

export const LAMPORTS_PER_SIGNATURE = 5000;
const MAX_CU = 1_400_000;
const DEFAULT_CU_PER_IX = 200_000;
const BUILTIN_CU_PER_IX = 3_000;
const SET_CU_LIMIT = 2;
const SET_CU_PRICE = 3;

const key = (s: string): string => Buffer.from(bs58.decode(s)).toString('hex');
const COMPUTE_BUDGET = key('ComputeBudget111111111111111111111111111111');
const BUILTINS = new Set([
  COMPUTE_BUDGET,
  key('11111111111111111111111111111111'),
  key('AddressLookupTab1e1111111111111111111111111'),
  key('Vote111111111111111111111111111111111111111'),
  key('Stake11111111111111111111111111111111111111'),
  key('BPFLoaderUpgradeab1e11111111111111111111111'),
  key('Config1111111111111111111111111111111111111'),
]);

export interface FeeInfo {
  fee: number;
  /** Micro-lamports per compute unit (what getRecentPrioritizationFees reports). */
  computeUnitPrice: number;
  computeUnitLimit: number;
}

export function feeOf(tx: TxFields): FeeInfo {
  // v1 (SIMD-0385): the config mask replaces ComputeBudget instructions (ignored even when present); the priority
  // fee is a total in lamports and an unset compute-unit limit is 0. (litesvm 1.4.1 and 1.5.0 charge exactly this; the v1 loop test checks the balance.)
  const c = tx.v1Config;
  if (c !== undefined) {
    const total = c.priorityFee ?? 0n;
    const cu = c.computeUnitLimit ?? 0;
    return {
      fee: LAMPORTS_PER_SIGNATURE * tx.signatures.length + Number(total),
      computeUnitPrice: cu === 0 ? 0 : Number((total * 1_000_000n) / BigInt(cu)),
      computeUnitLimit: cu,
    };
  }
  let limit: number | null = null;
  let price = 0n;
  let defaultLimit = 0;
  for (const ix of tx.instructions) {
    const program = tx.accountKeys[ix.programIdIndex]?.toString('hex') ?? '';
    if (program === COMPUTE_BUDGET) {
      if (ix.data[0] === SET_CU_LIMIT && ix.data.length >= 5) limit = ix.data.readUInt32LE(1);
      if (ix.data[0] === SET_CU_PRICE && ix.data.length >= 9) price = ix.data.readBigUInt64LE(1);
    }
    defaultLimit += BUILTINS.has(program) ? BUILTIN_CU_PER_IX : DEFAULT_CU_PER_IX;
  }
  const cuLimit = Math.min(MAX_CU, limit ?? defaultLimit);
  const priority = (price * BigInt(cuLimit) + 999_999n) / 1_000_000n;
  return {
    fee: LAMPORTS_PER_SIGNATURE * tx.signatures.length + Number(priority),
    computeUnitPrice: Number(price),
    computeUnitLimit: cuLimit,
  };
}

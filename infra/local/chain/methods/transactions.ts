import bs58 from 'bs58';
import { decodeTransaction, MAX_TX_SZ } from '../../../../proto/txn/decode';
import type { TxFields } from '../../../../proto/tx-fields';
import type { Chain } from '../chain';
import { encodeAccount, encodeTxWithMeta, innerInstructionsJson, returnDataJson, TX_ENCODINGS } from '../encode';
import { feeOf } from '../fees';
import type { TxRecord } from '../ledger';
import { invalidParams, RPC, RpcError } from '../rpc/errors';
import { nodeError } from '../tx-error';
import { config, isObj, oneOf, optBool, optU64, pubkey, required, signatureParam, typeName, u64, type Raw } from '../rpc/params';
import { accountEncoding } from './account-params';
import { contextSlot, historicalCommitment, withContext, type Methods } from './common';

// Submission, simulation, statuses and transaction history.

const MAX_BASE58_TX = 1683;
const MAX_BASE64_TX = 1644;
const MAX_STATUSES = 256;
const MAX_SIGNATURES_LIMIT = 1000;
const MAX_AIRDROP_LAMPORTS = 10n ** 15n;
const MAX_PRIORITIZATION_ADDRESSES = 128;
const TX_TYPE = 'solana_transaction::versioned::VersionedTransaction';

interface Decoded {
  raw: Buffer;
  tx: TxFields;
}

/** sendTransaction / simulateTransaction's wire transaction, checked as agave's decode_and_deserialize does. */
function decodeWire(v: unknown, cfg: Raw): Decoded {
  if (typeof v !== 'string') throw invalidParams(`invalid type: ${typeName(v)}, expected a string`);
  const enc = oneOf(cfg, 'encoding', ['base58', 'base64'] as const, 'base58');
  let raw: Buffer;
  if (enc === 'base58') {
    if (v.length > MAX_BASE58_TX) throw invalidParams(`base58 encoded ${TX_TYPE} too large: ${v.length} bytes (max: encoded/raw ${MAX_BASE58_TX}/${MAX_TX_SZ})`);
    const b = bs58.decodeUnsafe(v);
    if (b === undefined) throw invalidParams(`invalid base58 encoding: ${JSON.stringify(v.slice(0, 16))}`);
    raw = Buffer.from(b);
  } else {
    if (v.length > MAX_BASE64_TX) throw invalidParams(`base64 encoded ${TX_TYPE} too large: ${v.length} bytes (max: encoded/raw ${MAX_BASE64_TX}/${MAX_TX_SZ})`);
    raw = Buffer.from(v, 'base64');
  }
  if (raw.length > MAX_TX_SZ) throw invalidParams(`decoded ${TX_TYPE} too large: ${raw.length} bytes (max: ${MAX_TX_SZ} bytes)`);
  const d = decodeTransaction(raw, 0n);
  if (!d.ok) {
    if (d.reason === 'truncated' || d.reason === 'trailing_bytes' || d.reason === 'no_signatures') throw invalidParams(`failed to deserialize ${TX_TYPE}: ${d.reason}`);
    throw invalidParams('invalid transaction: Transaction failed to sanitize accounts offsets correctly');
  }
  return { raw, tx: d.tx };
}

function statusOf(r: TxRecord): Record<string, unknown> {
  const err = r.meta.err === null ? null : r.meta.err.json;
  return {
    confirmationStatus: r.frozen ? 'finalized' : 'processed',
    confirmations: r.frozen ? null : 0,
    err,
    slot: r.slot,
    status: err === null ? { Ok: null } : { Err: err },
  };
}

function blockTimeOf(chain: Chain, slot: number): number | null {
  return chain.ledger.block(slot)?.blockTime ?? null;
}

/** The multi-leader run's forward hop (send-service.ts): what sendTransaction does instead of executing. */
export type ForwardToLeaders = (raw: Buffer, tx: TxFields, maxRetries: number | undefined) => void;

export function transactionMethods(chain: Chain, forward?: ForwardToLeaders): Methods {
  /** The simulation result value, and the error's Display text for a preflight message. */
  const simulateValue = (d: Decoded, cfg: Raw): { value: Record<string, unknown>; errText: string | null } => {
    const sigVerify = optBool(cfg, 'sigVerify', false);
    const replace = optBool(cfg, 'replaceRecentBlockhash', false);
    if (sigVerify && replace) throw invalidParams('sigVerify may not be used with replaceRecentBlockhash');
    let { raw, tx } = d;
    let replacement: unknown = null;
    if (replace) {
      const lb = chain.latestBlockhash();
      raw = Buffer.from(raw);
      bs58.decode(lb.blockhash).forEach((b, i) => (raw[tx.recentBlockhash.byteOffset - d.raw.byteOffset + i] = b));
      const again = decodeTransaction(raw, 0n);
      if (!again.ok) throw invalidParams('invalid transaction');
      tx = again.tx;
      replacement = { blockhash: lb.blockhash, lastValidBlockHeight: lb.lastValidBlockHeight };
    }
    const accountsCfg = cfg.accounts;
    let addresses: Buffer[] | null = null;
    let accEnc = accountEncoding({}, 'base64');
    if (accountsCfg !== undefined && accountsCfg !== null) {
      if (!isObj(accountsCfg) || !Array.isArray(accountsCfg.addresses)) throw invalidParams('accounts: expected {addresses: [...], encoding}');
      accEnc = accountEncoding(accountsCfg, 'base64');
      if (accEnc === 'base58' || accEnc === 'binary') throw invalidParams('base58 encoding not supported');
      const max = tx.accountKeys.length + tx.addressTableLookups.reduce((n, l) => n + l.writableIndexes.length + l.readonlyIndexes.length, 0);
      if (accountsCfg.addresses.length > max) throw invalidParams(`Too many accounts provided; max ${max}`);
      addresses = accountsCfg.addresses.map(pubkey);
    }
    const base = { accounts: null as unknown, fee: null as unknown, innerInstructions: null as unknown, loadedAccountsDataSize: 0, replacementBlockhash: replacement, returnData: null as unknown };
    const signature = bs58.encode(tx.signatures[0]!);
    const early = !replace && !chain.lifetimeValid(tx) ? nodeError('BlockhashNotFound') : chain.ledger.tx(signature) !== undefined ? nodeError('AlreadyProcessed') : null;
    if (early !== null) return { value: { ...base, err: early.json, logs: [], unitsConsumed: 0 }, errText: early.text };
    const sim = chain.simulate(raw, tx, sigVerify, addresses !== null);
    if (addresses !== null) {
      base.accounts = addresses.map((k) => {
        const post = sim.post.get(k.toString('hex'));
        const a = post !== undefined ? { lamports: post.lamports(), data: post.data(), owner: post.owner(), executable: post.executable(), rentEpoch: post.rentEpoch() } : chain.bank.account(k);
        return a === null || a.lamports === 0n ? null : encodeAccount(a, accEnc);
      });
    }
    if (optBool(cfg, 'innerInstructions', false)) base.innerInstructions = innerInstructionsJson(sim.innerInstructions);
    base.returnData = returnDataJson(sim);
    base.fee = sim.err === null ? sim.fee : null;
    return { value: { ...base, err: sim.err === null ? null : sim.err.json, logs: sim.logs, unitsConsumed: sim.unitsConsumed }, errText: sim.err?.text ?? null };
  };

  return {
    sendTransaction: (p) => {
      const cfg = config(p[1]);
      const d = decodeWire(required(p, 0, 'data'), cfg);
      contextSlot(chain, { commitment: cfg.preflightCommitment, minContextSlot: cfg.minContextSlot });
      const signature = bs58.encode(d.tx.signatures[0]!);
      if (!optBool(cfg, 'skipPreflight', false)) {
        const { value, errText } = simulateValue(d, { sigVerify: true });
        if (value.err === 'SignatureFailure') throw new RpcError(RPC.signatureVerificationFailure.code, RPC.signatureVerificationFailure.message);
        if (errText !== null) throw new RpcError(RPC.sendTransactionPreflightFailure.code, `${RPC.sendTransactionPreflightFailure.message}: ${errText}`, value);
      }
      const maxRetries = optU64(cfg, 'maxRetries');
      // Multi-leader run: forwarded to the leaders' TPU (with retries), as an RPC node does; it lands only if
      // it reaches a leader in time. Otherwise executed at once. Either way, without preflight a rejected
      // transaction is dropped silently, as a leader would drop it.
      if (forward !== undefined) forward(d.raw, d.tx, maxRetries);
      else chain.submit(d.raw, d.tx);
      return signature;
    },
    simulateTransaction: (p) => {
      const cfg = config(p[1]);
      const d = decodeWire(required(p, 0, 'data'), cfg);
      const slot = contextSlot(chain, cfg);
      return withContext(slot, simulateValue(d, cfg).value);
    },
    requestAirdrop: (p) => {
      const to = pubkey(required(p, 0, 'pubkey'));
      const lamports = u64(required(p, 1, 'lamports'), 'lamports');
      contextSlot(chain, config(p[2]));
      if (BigInt(lamports) > MAX_AIRDROP_LAMPORTS) throw new RpcError(RPC.internal.code, `airdrop request failed: at most ${MAX_AIRDROP_LAMPORTS} lamports per request`);
      const r = chain.airdrop(to, BigInt(lamports));
      if (!r.ok) throw new RpcError(RPC.internal.code, `airdrop request failed: ${r.err.text}`);
      if (r.record.meta.err !== null) throw new RpcError(RPC.internal.code, `airdrop request failed: ${r.record.meta.err.text}`);
      return r.record.signature;
    },
    getSignatureStatuses: (p) => {
      const sigs = required(p, 0, 'signatures');
      if (!Array.isArray(sigs)) throw invalidParams('invalid type: expected a sequence of signatures');
      if (sigs.length > MAX_STATUSES) throw invalidParams(`Too many inputs provided; max ${MAX_STATUSES}`);
      const keys = sigs.map((s) => bs58.encode(signatureParam(s)));
      config(p[1]);
      return withContext(chain.slot, keys.map((k) => {
        const r = chain.ledger.tx(k);
        return r === undefined ? null : statusOf(r);
      }));
    },
    getTransaction: (p) => {
      const sig = bs58.encode(signatureParam(required(p, 0, 'signature')));
      // The second param may be the encoding string (the deprecated form).
      const cfg = typeof p[1] === 'string' ? { encoding: p[1] } : config(p[1]);
      historicalCommitment(cfg);
      const enc = oneOf(cfg, 'encoding', TX_ENCODINGS, 'json');
      const max = optU64(cfg, 'maxSupportedTransactionVersion');
      const r = chain.ledger.tx(sig);
      if (r === undefined || !r.frozen) return null;
      return { blockTime: blockTimeOf(chain, r.slot), slot: r.slot, ...encodeTxWithMeta(r, enc, max) };
    },
    getSignaturesForAddress: (p) => {
      const addr = bs58.encode(pubkey(required(p, 0, 'address')));
      const cfg = config(p[1]);
      historicalCommitment(cfg);
      contextSlot(chain, cfg);
      const limit = optU64(cfg, 'limit') ?? MAX_SIGNATURES_LIMIT;
      if (limit < 1 || limit > MAX_SIGNATURES_LIMIT) throw invalidParams(`Invalid limit; max ${MAX_SIGNATURES_LIMIT}`);
      const before = cfg.before === undefined || cfg.before === null ? null : bs58.encode(signatureParam(cfg.before));
      const until = cfg.until === undefined || cfg.until === null ? null : bs58.encode(signatureParam(cfg.until));
      const out: unknown[] = [];
      let started = before === null;
      for (const r of chain.ledger.forAddress(addr)) {
        if (out.length >= limit) break;
        if (!r.frozen) continue;
        if (!started) {
          if (r.signature === before) started = true;
          continue;
        }
        if (r.signature === until) break;
        const err = r.meta.err === null ? null : r.meta.err.json;
        out.push({ blockTime: blockTimeOf(chain, r.slot), confirmationStatus: 'finalized', err, memo: null, signature: r.signature, slot: r.slot });
      }
      return out;
    },
    getFeeForMessage: (p) => {
      const v = required(p, 0, 'message');
      if (typeof v !== 'string') throw invalidParams(`invalid type: ${typeName(v)}, expected a string`);
      const msg = Buffer.from(v, 'base64');
      const slot = contextSlot(chain, config(p[1]));
      const nSig = msg.length > 1 ? ((msg[0]! & 0x80) !== 0 ? msg[1]! : msg[0]!) : 0;
      if (nSig === 0 || nSig > 127) throw invalidParams('invalid message');
      const d = decodeTransaction(Buffer.concat([Buffer.from([nSig]), Buffer.alloc(64 * nSig), msg]), 0n);
      if (!d.ok) throw invalidParams(`invalid message: ${d.reason}`);
      return withContext(slot, chain.blockhashValid(d.tx.recentBlockhash) ? feeOf(d.tx).fee : null);
    },
    getRecentPrioritizationFees: (p) => {
      const raw = p[0] ?? [];
      if (!Array.isArray(raw)) throw invalidParams('invalid type: expected a sequence of pubkeys');
      if (raw.length > MAX_PRIORITIZATION_ADDRESSES) throw invalidParams(`Too many inputs provided; max ${MAX_PRIORITIZATION_ADDRESSES}`);
      const addrs = raw.map((a) => bs58.encode(pubkey(a)));
      return chain.ledger.recentBlocks(150).map((b) => {
        // Per slot: the lowest price that landed (per account: among transactions write-locking it; the
        // highest of those minimums over the requested accounts).
        const minFor = (filter: (r: TxRecord) => boolean): number | null => {
          let min: number | null = null;
          for (const r of b.txs) if (filter(r)) min = min === null ? r.meta.computeUnitPrice : Math.min(min, r.meta.computeUnitPrice);
          return min;
        };
        let fee = minFor(() => true) ?? 0;
        if (addrs.length > 0) fee = Math.max(0, ...addrs.map((a) => minFor((r) => r.keys.some((k, i) => k === a && r.writable[i] === true)) ?? 0));
        return { prioritizationFee: fee, slot: b.slot };
      });
    },
  };
}

import { Pool } from 'undici';

// Preflight (JSON-RPC sendTransaction with skipPreflight false): simulateTransaction on the upstream chain RPC,
// signature verification on, with the request's commitment and minContextSlot. Three ways not to pass:
//   failed          the simulation ran and returned an error: -32002, data = the whole simulation result
//   upstream_error  the RPC node answered with an error, a non-200, or something that is not a result
//   timeout         no answer within the configured timeout
// The result is a value; nothing here throws.

export type Commitment = 'processed' | 'confirmed' | 'finalized';

export interface PreflightOptions {
  commitment?: Commitment;
  minContextSlot?: number;
}

export type PreflightResult =
  | { kind: 'ok' }
  | { kind: 'failed'; error: string; data: unknown }
  | { kind: 'upstream_error' }
  | { kind: 'timeout' };

export interface Preflight {
  simulate(tx: Buffer, opts: PreflightOptions): Promise<PreflightResult>;
  close(): Promise<void>;
}

export class RpcPreflight implements Preflight {
  private readonly pool: Pool;
  private readonly path: string;

  constructor(url: string, private readonly timeoutMs: number, connections = 16) {
    const u = new URL(url);
    this.path = `${u.pathname}${u.search}`;
    this.pool = new Pool(u.origin, { connections, keepAliveTimeout: 30_000 });
  }

  async simulate(tx: Buffer, opts: PreflightOptions): Promise<PreflightResult> {
    const config: Record<string, unknown> = { encoding: 'base64', sigVerify: true };
    if (opts.commitment !== undefined) config.commitment = opts.commitment;
    if (opts.minContextSlot !== undefined) config.minContextSlot = opts.minContextSlot;
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'simulateTransaction', params: [tx.toString('base64'), config] });
    const abort = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      abort.abort();
    }, this.timeoutMs);
    try {
      const res = await this.pool.request({ path: this.path, method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: abort.signal });
      const text = await res.body.text();
      if (res.statusCode !== 200) return { kind: 'upstream_error' };
      return interpret(text);
    } catch {
      return timedOut ? { kind: 'timeout' } : { kind: 'upstream_error' };
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    await this.pool.close().catch(() => undefined);
  }
}

/** The answer of simulateTransaction: `result.value` with `err` null (passed) or not (failed). */
export function interpret(text: string): PreflightResult {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return { kind: 'upstream_error' };
  }
  if (typeof v !== 'object' || v === null) return { kind: 'upstream_error' };
  const o = v as { error?: unknown; result?: { value?: { err?: unknown } } };
  if (o.error !== undefined && o.error !== null) return { kind: 'upstream_error' };
  const value = o.result?.value;
  if (typeof value !== 'object' || value === null) return { kind: 'upstream_error' };
  if (value.err === null || value.err === undefined) return { kind: 'ok' };
  return { kind: 'failed', error: transactionErrorText(value.err), data: value };
}

// The chain's RPC renders a TransactionError with its Display text in this message; the common ones here,
// anything else as its JSON (which is what the RPC's own `err` field carries).
const PLAIN: Record<string, string> = {
  AccountNotFound: 'Attempt to debit an account but found no record of a prior credit.',
  BlockhashNotFound: 'Blockhash not found',
  InsufficientFundsForFee: 'Insufficient funds for fee',
  AlreadyProcessed: 'This transaction has already been processed',
  SignatureFailure: 'Transaction did not pass signature verification',
  InvalidAccountForFee: 'This account may not be used to pay transaction fees',
  AccountInUse: 'Account in use',
  ProgramAccountNotFound: 'Attempt to load a program that does not exist',
};

const INSTRUCTION: Record<string, string> = {
  InsufficientFunds: 'insufficient funds for instruction',
  InvalidAccountData: 'invalid account data for instruction',
  InvalidArgument: 'invalid program argument',
  InvalidInstructionData: 'invalid instruction data',
  MissingRequiredSignature: 'missing required signature for instruction',
  AccountNotExecutable: 'instruction expected an executable account',
  UnsupportedProgramId: 'Unsupported program id',
};

export function transactionErrorText(err: unknown): string {
  if (typeof err === 'string') return PLAIN[err] ?? err;
  if (typeof err === 'object' && err !== null && 'InstructionError' in err) {
    const ie = (err as { InstructionError: unknown }).InstructionError;
    if (Array.isArray(ie) && ie.length === 2 && typeof ie[0] === 'number') {
      const inner = ie[1] as unknown;
      let what: string;
      if (typeof inner === 'string') what = INSTRUCTION[inner] ?? inner;
      else if (typeof inner === 'object' && inner !== null && 'Custom' in inner) what = `custom program error: 0x${Number((inner as { Custom: number }).Custom).toString(16)}`;
      else what = JSON.stringify(inner);
      return `Error processing Instruction ${ie[0]}: ${what}`;
    }
  }
  return JSON.stringify(err);
}

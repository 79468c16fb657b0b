import bs58 from 'bs58';
import type { JsonRpcCall } from '../../infra/base/json-rpc';
import { decodeLookupTable, type LookupTableState } from '../../proto/lookup-table/account';
import { ALT_PROGRAM_ID } from '../../proto/lookup-table/program';
import { lookupMetrics } from './lookup-metrics';

// Loads lookup-table accounts from a chain node: the keys asked for in one turn go out together in
// getMultipleAccounts calls of at most 100 keys (the node's limit), at most `maxInFlight` calls at once; keys
// asked for while their call is out are not asked again. Each answer names the slot it was read at.

/** agave's getMultipleAccounts limit (MAX_MULTIPLE_ACCOUNTS). */
export const MAX_KEYS_PER_CALL = 100;

export type FetchResult =
  | { kind: 'table'; table: LookupTableState; contextSlot: bigint }
  /** No such account, or one the ALT program does not own or that is not an initialized table. */
  | { kind: 'absent'; contextSlot: bigint }
  | { kind: 'failed' };

export interface FetcherOptions {
  call: JsonRpcCall;
  maxInFlight: number;
  /** Called once per key asked for, with the call's duration (ms; NaN when it failed before an answer). */
  onResult(keyId: string, r: FetchResult, ms: number): void;
}

interface Ask {
  key: Buffer;
  commitment: Commitment;
}

export type Commitment = 'processed' | 'confirmed';

interface AccountJson {
  data?: unknown;
  owner?: unknown;
}

export class TableFetcher {
  private readonly queue = new Map<string, Ask>();
  private inFlight = 0;
  private scheduled = false;
  private closed = false;
  /** Calls made (each up to 100 keys). */
  calls = 0;

  constructor(private readonly o: FetcherOptions) {}

  /** Asks for `key` (id: its latin1 form); a key already queued keeps its place. */
  request(keyId: string, key: Buffer, commitment: Commitment): void {
    if (this.closed) return;
    const q = this.queue.get(keyId);
    if (q !== undefined) {
      if (commitment === 'processed') q.commitment = 'processed';
      return;
    }
    this.queue.set(keyId, { key, commitment });
    this.schedule();
  }

  get queued(): number {
    return this.queue.size;
  }

  close(): void {
    this.closed = true;
    this.queue.clear();
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    // One turn's requests go out together.
    setImmediate(() => {
      this.scheduled = false;
      this.pump();
    });
  }

  private pump(): void {
    while (!this.closed && this.inFlight < this.o.maxInFlight && this.queue.size > 0) {
      const batch: Array<[string, Ask]> = [];
      // The first key's commitment decides the call's; keys of the other commitment wait for the next call.
      let commitment: Commitment | undefined;
      for (const [id, a] of this.queue) {
        commitment ??= a.commitment;
        if (a.commitment !== commitment) continue;
        batch.push([id, a]);
        if (batch.length === MAX_KEYS_PER_CALL) break;
      }
      for (const [id] of batch) this.queue.delete(id);
      void this.send(batch, commitment!);
    }
  }

  private async send(batch: Array<[string, Ask]>, commitment: Commitment): Promise<void> {
    this.inFlight++;
    this.calls++;
    lookupMetrics.fetches.inc();
    const t0 = performance.now();
    let results: FetchResult[];
    try {
      const r = await this.o.call<{ context?: { slot?: unknown }; value?: unknown }>('getMultipleAccounts', [
        batch.map(([, a]) => bs58.encode(a.key)),
        { encoding: 'base64', commitment },
      ]);
      results = parseAnswer(r, batch.length);
    } catch {
      results = batch.map(() => ({ kind: 'failed' }) as const);
    }
    this.inFlight--;
    const ms = performance.now() - t0;
    if (!this.closed) batch.forEach(([id], i) => this.o.onResult(id, results[i]!, ms));
    this.pump();
  }
}

/** One result per key asked; an answer of the wrong shape fails every key of the call. */
export function parseAnswer(r: { context?: { slot?: unknown }; value?: unknown } | null | undefined, n: number): FetchResult[] {
  const slot = r?.context?.slot;
  const value = r?.value;
  if (typeof slot !== 'number' || !Array.isArray(value) || value.length !== n) return new Array<FetchResult>(n).fill({ kind: 'failed' });
  const contextSlot = BigInt(slot);
  return value.map((v: unknown): FetchResult => {
    if (v === null) return { kind: 'absent', contextSlot };
    const a = v as AccountJson;
    if (typeof a.owner !== 'string' || !Array.isArray(a.data) || typeof a.data[0] !== 'string') return { kind: 'failed' };
    if (a.owner !== ALT_PROGRAM_ID_B58) return { kind: 'absent', contextSlot };
    const d = decodeLookupTable(Buffer.from(a.data[0], 'base64'));
    return d.ok ? { kind: 'table', table: d.table, contextSlot } : { kind: 'absent', contextSlot };
  });
}

const ALT_PROGRAM_ID_B58 = bs58.encode(ALT_PROGRAM_ID);

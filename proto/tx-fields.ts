// The fields of SubscribeResponseTransaction as the decoder produces them (views into the packet where it
// can; its instructions as ranges of the packet, WireInstruction below). The encoder in proto/wire.ts turns this
// into protobuf bytes once, in ingest.

export interface InstructionFields {
  programIdIndex: number;
  accounts: Buffer;
  data: Buffer;
}

/**
 * An instruction as the decoder reads it: its account indexes and data as ranges of the transaction's bytes, each
 * made a Buffer view only when something asks for it. Ingest re-encodes instructions byte for byte from the
 * ranges (proto/wire.ts; the facts header reads `dataLength`) and never asks: two views per instruction were the
 * largest part of the views decoding made (~40 ns each, Node 20).
 */
export class WireInstruction implements InstructionFields {
  private a: Buffer | undefined;
  private d: Buffer | undefined;

  constructor(
    readonly programIdIndex: number,
    /** The bytes both ranges are in (the decoder's input). */
    readonly bytes: Buffer,
    readonly accountsOff: number,
    readonly accountsLength: number,
    readonly dataOff: number,
    readonly dataLength: number,
  ) {}

  get accounts(): Buffer {
    return (this.a ??= this.bytes.subarray(this.accountsOff, this.accountsOff + this.accountsLength));
  }

  get data(): Buffer {
    return (this.d ??= this.bytes.subarray(this.dataOff, this.dataOff + this.dataLength));
  }
}

export interface LookupFields {
  accountKey: Buffer;
  writableIndexes: Buffer;
  readonlyIndexes: Buffer;
}

/** The config values a v1 transaction carries (SIMD-0385); absent = the bit is clear (the SIMD's defaults then apply). */
export interface TxnConfig {
  mask: number;
  priorityFee?: bigint;
  computeUnitLimit?: number;
  loadedAccountsDataSizeLimit?: number;
  heapSize?: number;
}

export interface TxFields {
  slot: bigint;
  numRequiredSignatures: number;
  numReadonlySignedAccounts: number;
  numReadonlyUnsignedAccounts: number;
  recentBlockhash: Buffer;
  signatures: Buffer[];
  accountKeys: Buffer[];
  instructions: InstructionFields[];
  addressTableLookups: LookupFields[];
  /** false for legacy, true for v0 and v1 (the v1 proto has no version field); undefined leaves the wrapper absent. */
  versioned: boolean | undefined;
  /** v1 only: its config values (no proto field carries them; the local chain's fee and `meridian decode` use them). */
  v1Config?: TxnConfig;
}

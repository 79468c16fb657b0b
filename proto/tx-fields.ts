// The fields of SubscribeResponseTransaction as the decoder produces them (views into the packet where it
// can). The encoder in proto/wire.ts turns this into protobuf bytes once, in ingest.

export interface InstructionFields {
  programIdIndex: number;
  accounts: Buffer;
  data: Buffer;
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

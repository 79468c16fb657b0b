// package: meridian.stream.v2
// file: stream_v2.proto

import * as jspb from "google-protobuf";
import * as google_protobuf_timestamp_pb from "google-protobuf/google/protobuf/timestamp_pb";
import * as google_protobuf_wrappers_pb from "google-protobuf/google/protobuf/wrappers_pb";

export class SubscribeRequest extends jspb.Message {
  hasStart(): boolean;
  clearStart(): void;
  getStart(): Start | undefined;
  setStart(value?: Start): void;

  hasAddFilter(): boolean;
  clearAddFilter(): void;
  getAddFilter(): FilterAdd | undefined;
  setAddFilter(value?: FilterAdd): void;

  hasRemoveFilter(): boolean;
  clearRemoveFilter(): void;
  getRemoveFilter(): FilterRemove | undefined;
  setRemoveFilter(value?: FilterRemove): void;

  hasPing(): boolean;
  clearPing(): void;
  getPing(): Ping | undefined;
  setPing(value?: Ping): void;

  getRequestCase(): SubscribeRequest.RequestCase;
  serializeBinary(): Uint8Array;
  toObject(includeInstance?: boolean): SubscribeRequest.AsObject;
  static toObject(includeInstance: boolean, msg: SubscribeRequest): SubscribeRequest.AsObject;
  static extensions: {[key: number]: jspb.ExtensionFieldInfo<jspb.Message>};
  static extensionsBinary: {[key: number]: jspb.ExtensionFieldBinaryInfo<jspb.Message>};
  static serializeBinaryToWriter(message: SubscribeRequest, writer: jspb.BinaryWriter): void;
  static deserializeBinary(bytes: Uint8Array): SubscribeRequest;
  static deserializeBinaryFromReader(message: SubscribeRequest, reader: jspb.BinaryReader): SubscribeRequest;
}

export namespace SubscribeRequest {
  export type AsObject = {
    start?: Start.AsObject,
    addFilter?: FilterAdd.AsObject,
    removeFilter?: FilterRemove.AsObject,
    ping?: Ping.AsObject,
  }

  export enum RequestCase {
    REQUEST_NOT_SET = 0,
    START = 1,
    ADD_FILTER = 2,
    REMOVE_FILTER = 3,
    PING = 4,
  }
}

export class Start extends jspb.Message {
  hasCursor(): boolean;
  clearCursor(): void;
  getCursor(): Uint8Array | string;
  getCursor_asU8(): Uint8Array;
  getCursor_asB64(): string;
  setCursor(value: Uint8Array | string): void;

  hasSlot(): boolean;
  clearSlot(): void;
  getSlot(): number;
  setSlot(value: number): void;

  hasTime(): boolean;
  clearTime(): void;
  getTime(): google_protobuf_timestamp_pb.Timestamp | undefined;
  setTime(value?: google_protobuf_timestamp_pb.Timestamp): void;

  getLagPolicy(): LagPolicyMap[keyof LagPolicyMap];
  setLagPolicy(value: LagPolicyMap[keyof LagPolicyMap]): void;

  getEncoding(): TransactionEncodingMap[keyof TransactionEncodingMap];
  setEncoding(value: TransactionEncodingMap[keyof TransactionEncodingMap]): void;

  getSlots(): boolean;
  setSlots(value: boolean): void;

  getEntries(): boolean;
  setEntries(value: boolean): void;

  getFromCase(): Start.FromCase;
  serializeBinary(): Uint8Array;
  toObject(includeInstance?: boolean): Start.AsObject;
  static toObject(includeInstance: boolean, msg: Start): Start.AsObject;
  static extensions: {[key: number]: jspb.ExtensionFieldInfo<jspb.Message>};
  static extensionsBinary: {[key: number]: jspb.ExtensionFieldBinaryInfo<jspb.Message>};
  static serializeBinaryToWriter(message: Start, writer: jspb.BinaryWriter): void;
  static deserializeBinary(bytes: Uint8Array): Start;
  static deserializeBinaryFromReader(message: Start, reader: jspb.BinaryReader): Start;
}

export namespace Start {
  export type AsObject = {
    cursor: Uint8Array | string,
    slot: number,
    time?: google_protobuf_timestamp_pb.Timestamp.AsObject,
    lagPolicy: LagPolicyMap[keyof LagPolicyMap],
    encoding: TransactionEncodingMap[keyof TransactionEncodingMap],
    slots: boolean,
    entries: boolean,
  }

  export enum FromCase {
    FROM_NOT_SET = 0,
    CURSOR = 1,
    SLOT = 2,
    TIME = 3,
  }
}

export class FilterAdd extends jspb.Message {
  getId(): string;
  setId(value: string): void;

  hasFilter(): boolean;
  clearFilter(): void;
  getFilter(): TransactionFilter | undefined;
  setFilter(value?: TransactionFilter): void;

  serializeBinary(): Uint8Array;
  toObject(includeInstance?: boolean): FilterAdd.AsObject;
  static toObject(includeInstance: boolean, msg: FilterAdd): FilterAdd.AsObject;
  static extensions: {[key: number]: jspb.ExtensionFieldInfo<jspb.Message>};
  static extensionsBinary: {[key: number]: jspb.ExtensionFieldBinaryInfo<jspb.Message>};
  static serializeBinaryToWriter(message: FilterAdd, writer: jspb.BinaryWriter): void;
  static deserializeBinary(bytes: Uint8Array): FilterAdd;
  static deserializeBinaryFromReader(message: FilterAdd, reader: jspb.BinaryReader): FilterAdd;
}

export namespace FilterAdd {
  export type AsObject = {
    id: string,
    filter?: TransactionFilter.AsObject,
  }
}

export class TransactionFilter extends jspb.Message {
  clearAccountIncludeList(): void;
  getAccountIncludeList(): Array<string>;
  setAccountIncludeList(value: Array<string>): void;
  addAccountInclude(value: string, index?: number): string;

  clearAccountExcludeList(): void;
  getAccountExcludeList(): Array<string>;
  setAccountExcludeList(value: Array<string>): void;
  addAccountExclude(value: string, index?: number): string;

  clearAccountRequiredList(): void;
  getAccountRequiredList(): Array<string>;
  setAccountRequiredList(value: Array<string>): void;
  addAccountRequired(value: string, index?: number): string;

  getEncoding(): TransactionEncodingMap[keyof TransactionEncodingMap];
  setEncoding(value: TransactionEncodingMap[keyof TransactionEncodingMap]): void;

  getMatchLoadedAddresses(): boolean;
  setMatchLoadedAddresses(value: boolean): void;

  clearInstructionsList(): void;
  getInstructionsList(): Array<InstructionFilter>;
  setInstructionsList(value: Array<InstructionFilter>): void;
  addInstructions(value?: InstructionFilter, index?: number): InstructionFilter;

  clearAccountWritableList(): void;
  getAccountWritableList(): Array<string>;
  setAccountWritableList(value: Array<string>): void;
  addAccountWritable(value: string, index?: number): string;

  clearAccountSignerList(): void;
  getAccountSignerList(): Array<string>;
  setAccountSignerList(value: Array<string>): void;
  addAccountSigner(value: string, index?: number): string;

  getSignature(): string;
  setSignature(value: string): void;

  hasVote(): boolean;
  clearVote(): void;
  getVote(): google_protobuf_wrappers_pb.BoolValue | undefined;
  setVote(value?: google_protobuf_wrappers_pb.BoolValue): void;

  serializeBinary(): Uint8Array;
  toObject(includeInstance?: boolean): TransactionFilter.AsObject;
  static toObject(includeInstance: boolean, msg: TransactionFilter): TransactionFilter.AsObject;
  static extensions: {[key: number]: jspb.ExtensionFieldInfo<jspb.Message>};
  static extensionsBinary: {[key: number]: jspb.ExtensionFieldBinaryInfo<jspb.Message>};
  static serializeBinaryToWriter(message: TransactionFilter, writer: jspb.BinaryWriter): void;
  static deserializeBinary(bytes: Uint8Array): TransactionFilter;
  static deserializeBinaryFromReader(message: TransactionFilter, reader: jspb.BinaryReader): TransactionFilter;
}

export namespace TransactionFilter {
  export type AsObject = {
    accountIncludeList: Array<string>,
    accountExcludeList: Array<string>,
    accountRequiredList: Array<string>,
    encoding: TransactionEncodingMap[keyof TransactionEncodingMap],
    matchLoadedAddresses: boolean,
    instructionsList: Array<InstructionFilter.AsObject>,
    accountWritableList: Array<string>,
    accountSignerList: Array<string>,
    signature: string,
    vote?: google_protobuf_wrappers_pb.BoolValue.AsObject,
  }
}

export class InstructionFilter extends jspb.Message {
  getProgramId(): string;
  setProgramId(value: string): void;

  getDataPrefix(): Uint8Array | string;
  getDataPrefix_asU8(): Uint8Array;
  getDataPrefix_asB64(): string;
  setDataPrefix(value: Uint8Array | string): void;

  clearDataAtList(): void;
  getDataAtList(): Array<DataBytes>;
  setDataAtList(value: Array<DataBytes>): void;
  addDataAt(value?: DataBytes, index?: number): DataBytes;

  hasDataSize(): boolean;
  clearDataSize(): void;
  getDataSize(): google_protobuf_wrappers_pb.UInt32Value | undefined;
  setDataSize(value?: google_protobuf_wrappers_pb.UInt32Value): void;

  serializeBinary(): Uint8Array;
  toObject(includeInstance?: boolean): InstructionFilter.AsObject;
  static toObject(includeInstance: boolean, msg: InstructionFilter): InstructionFilter.AsObject;
  static extensions: {[key: number]: jspb.ExtensionFieldInfo<jspb.Message>};
  static extensionsBinary: {[key: number]: jspb.ExtensionFieldBinaryInfo<jspb.Message>};
  static serializeBinaryToWriter(message: InstructionFilter, writer: jspb.BinaryWriter): void;
  static deserializeBinary(bytes: Uint8Array): InstructionFilter;
  static deserializeBinaryFromReader(message: InstructionFilter, reader: jspb.BinaryReader): InstructionFilter;
}

export namespace InstructionFilter {
  export type AsObject = {
    programId: string,
    dataPrefix: Uint8Array | string,
    dataAtList: Array<DataBytes.AsObject>,
    dataSize?: google_protobuf_wrappers_pb.UInt32Value.AsObject,
  }
}

export class DataBytes extends jspb.Message {
  getOffset(): number;
  setOffset(value: number): void;

  getBytes(): Uint8Array | string;
  getBytes_asU8(): Uint8Array;
  getBytes_asB64(): string;
  setBytes(value: Uint8Array | string): void;

  serializeBinary(): Uint8Array;
  toObject(includeInstance?: boolean): DataBytes.AsObject;
  static toObject(includeInstance: boolean, msg: DataBytes): DataBytes.AsObject;
  static extensions: {[key: number]: jspb.ExtensionFieldInfo<jspb.Message>};
  static extensionsBinary: {[key: number]: jspb.ExtensionFieldBinaryInfo<jspb.Message>};
  static serializeBinaryToWriter(message: DataBytes, writer: jspb.BinaryWriter): void;
  static deserializeBinary(bytes: Uint8Array): DataBytes;
  static deserializeBinaryFromReader(message: DataBytes, reader: jspb.BinaryReader): DataBytes;
}

export namespace DataBytes {
  export type AsObject = {
    offset: number,
    bytes: Uint8Array | string,
  }
}

export class FilterRemove extends jspb.Message {
  getId(): string;
  setId(value: string): void;

  serializeBinary(): Uint8Array;
  toObject(includeInstance?: boolean): FilterRemove.AsObject;
  static toObject(includeInstance: boolean, msg: FilterRemove): FilterRemove.AsObject;
  static extensions: {[key: number]: jspb.ExtensionFieldInfo<jspb.Message>};
  static extensionsBinary: {[key: number]: jspb.ExtensionFieldBinaryInfo<jspb.Message>};
  static serializeBinaryToWriter(message: FilterRemove, writer: jspb.BinaryWriter): void;
  static deserializeBinary(bytes: Uint8Array): FilterRemove;
  static deserializeBinaryFromReader(message: FilterRemove, reader: jspb.BinaryReader): FilterRemove;
}

export namespace FilterRemove {
  export type AsObject = {
    id: string,
  }
}

export class Ping extends jspb.Message {
  getId(): number;
  setId(value: number): void;

  serializeBinary(): Uint8Array;
  toObject(includeInstance?: boolean): Ping.AsObject;
  static toObject(includeInstance: boolean, msg: Ping): Ping.AsObject;
  static extensions: {[key: number]: jspb.ExtensionFieldInfo<jspb.Message>};
  static extensionsBinary: {[key: number]: jspb.ExtensionFieldBinaryInfo<jspb.Message>};
  static serializeBinaryToWriter(message: Ping, writer: jspb.BinaryWriter): void;
  static deserializeBinary(bytes: Uint8Array): Ping;
  static deserializeBinaryFromReader(message: Ping, reader: jspb.BinaryReader): Ping;
}

export namespace Ping {
  export type AsObject = {
    id: number,
  }
}

export class SubscribeUpdate extends jspb.Message {
  getSeq(): number;
  setSeq(value: number): void;

  getCursor(): Uint8Array | string;
  getCursor_asU8(): Uint8Array;
  getCursor_asB64(): string;
  setCursor(value: Uint8Array | string): void;

  hasCreatedAt(): boolean;
  clearCreatedAt(): void;
  getCreatedAt(): google_protobuf_timestamp_pb.Timestamp | undefined;
  setCreatedAt(value?: google_protobuf_timestamp_pb.Timestamp): void;

  clearFiltersList(): void;
  getFiltersList(): Array<string>;
  setFiltersList(value: Array<string>): void;
  addFilters(value: string, index?: number): string;

  hasTransaction(): boolean;
  clearTransaction(): void;
  getTransaction(): Transaction | undefined;
  setTransaction(value?: Transaction): void;

  hasSlot(): boolean;
  clearSlot(): void;
  getSlot(): SlotUpdate | undefined;
  setSlot(value?: SlotUpdate): void;

  hasGap(): boolean;
  clearGap(): void;
  getGap(): Gap | undefined;
  setGap(value?: Gap): void;

  hasReplayComplete(): boolean;
  clearReplayComplete(): void;
  getReplayComplete(): ReplayComplete | undefined;
  setReplayComplete(value?: ReplayComplete): void;

  hasHeartbeat(): boolean;
  clearHeartbeat(): void;
  getHeartbeat(): Heartbeat | undefined;
  setHeartbeat(value?: Heartbeat): void;

  hasFilterAck(): boolean;
  clearFilterAck(): void;
  getFilterAck(): FilterAck | undefined;
  setFilterAck(value?: FilterAck): void;

  hasPong(): boolean;
  clearPong(): void;
  getPong(): Pong | undefined;
  setPong(value?: Pong): void;

  hasEntry(): boolean;
  clearEntry(): void;
  getEntry(): Entry | undefined;
  setEntry(value?: Entry): void;

  getUpdateCase(): SubscribeUpdate.UpdateCase;
  serializeBinary(): Uint8Array;
  toObject(includeInstance?: boolean): SubscribeUpdate.AsObject;
  static toObject(includeInstance: boolean, msg: SubscribeUpdate): SubscribeUpdate.AsObject;
  static extensions: {[key: number]: jspb.ExtensionFieldInfo<jspb.Message>};
  static extensionsBinary: {[key: number]: jspb.ExtensionFieldBinaryInfo<jspb.Message>};
  static serializeBinaryToWriter(message: SubscribeUpdate, writer: jspb.BinaryWriter): void;
  static deserializeBinary(bytes: Uint8Array): SubscribeUpdate;
  static deserializeBinaryFromReader(message: SubscribeUpdate, reader: jspb.BinaryReader): SubscribeUpdate;
}

export namespace SubscribeUpdate {
  export type AsObject = {
    seq: number,
    cursor: Uint8Array | string,
    createdAt?: google_protobuf_timestamp_pb.Timestamp.AsObject,
    filtersList: Array<string>,
    transaction?: Transaction.AsObject,
    slot?: SlotUpdate.AsObject,
    gap?: Gap.AsObject,
    replayComplete?: ReplayComplete.AsObject,
    heartbeat?: Heartbeat.AsObject,
    filterAck?: FilterAck.AsObject,
    pong?: Pong.AsObject,
    entry?: Entry.AsObject,
  }

  export enum UpdateCase {
    UPDATE_NOT_SET = 0,
    TRANSACTION = 5,
    SLOT = 6,
    GAP = 7,
    REPLAY_COMPLETE = 8,
    HEARTBEAT = 9,
    FILTER_ACK = 10,
    PONG = 11,
    ENTRY = 12,
  }
}

export class Transaction extends jspb.Message {
  getSlot(): number;
  setSlot(value: number): void;

  getSignature(): Uint8Array | string;
  getSignature_asU8(): Uint8Array;
  getSignature_asB64(): string;
  setSignature(value: Uint8Array | string): void;

  hasDecoded(): boolean;
  clearDecoded(): void;
  getDecoded(): TransactionMessage | undefined;
  setDecoded(value?: TransactionMessage): void;

  getRaw(): Uint8Array | string;
  getRaw_asU8(): Uint8Array;
  getRaw_asB64(): string;
  setRaw(value: Uint8Array | string): void;

  hasLoaded(): boolean;
  clearLoaded(): void;
  getLoaded(): LoadedAddresses | undefined;
  setLoaded(value?: LoadedAddresses): void;

  hasObservedAt(): boolean;
  clearObservedAt(): void;
  getObservedAt(): google_protobuf_timestamp_pb.Timestamp | undefined;
  setObservedAt(value?: google_protobuf_timestamp_pb.Timestamp): void;

  hasBlock(): boolean;
  clearBlock(): void;
  getBlock(): BlockRef | undefined;
  setBlock(value?: BlockRef): void;

  serializeBinary(): Uint8Array;
  toObject(includeInstance?: boolean): Transaction.AsObject;
  static toObject(includeInstance: boolean, msg: Transaction): Transaction.AsObject;
  static extensions: {[key: number]: jspb.ExtensionFieldInfo<jspb.Message>};
  static extensionsBinary: {[key: number]: jspb.ExtensionFieldBinaryInfo<jspb.Message>};
  static serializeBinaryToWriter(message: Transaction, writer: jspb.BinaryWriter): void;
  static deserializeBinary(bytes: Uint8Array): Transaction;
  static deserializeBinaryFromReader(message: Transaction, reader: jspb.BinaryReader): Transaction;
}

export namespace Transaction {
  export type AsObject = {
    slot: number,
    signature: Uint8Array | string,
    decoded?: TransactionMessage.AsObject,
    raw: Uint8Array | string,
    loaded?: LoadedAddresses.AsObject,
    observedAt?: google_protobuf_timestamp_pb.Timestamp.AsObject,
    block?: BlockRef.AsObject,
  }
}

export class BlockRef extends jspb.Message {
  getSlot(): number;
  setSlot(value: number): void;

  getParentSlot(): number;
  setParentSlot(value: number): void;

  getParentBlockId(): Uint8Array | string;
  getParentBlockId_asU8(): Uint8Array;
  getParentBlockId_asB64(): string;
  setParentBlockId(value: Uint8Array | string): void;

  getSource(): BlockRefSourceMap[keyof BlockRefSourceMap];
  setSource(value: BlockRefSourceMap[keyof BlockRefSourceMap]): void;

  getBatchFirstShred(): number;
  setBatchFirstShred(value: number): void;

  serializeBinary(): Uint8Array;
  toObject(includeInstance?: boolean): BlockRef.AsObject;
  static toObject(includeInstance: boolean, msg: BlockRef): BlockRef.AsObject;
  static extensions: {[key: number]: jspb.ExtensionFieldInfo<jspb.Message>};
  static extensionsBinary: {[key: number]: jspb.ExtensionFieldBinaryInfo<jspb.Message>};
  static serializeBinaryToWriter(message: BlockRef, writer: jspb.BinaryWriter): void;
  static deserializeBinary(bytes: Uint8Array): BlockRef;
  static deserializeBinaryFromReader(message: BlockRef, reader: jspb.BinaryReader): BlockRef;
}

export namespace BlockRef {
  export type AsObject = {
    slot: number,
    parentSlot: number,
    parentBlockId: Uint8Array | string,
    source: BlockRefSourceMap[keyof BlockRefSourceMap],
    batchFirstShred: number,
  }
}

export class TransactionMessage extends jspb.Message {
  getSlot(): number;
  setSlot(value: number): void;

  getNumRequiredSignatures(): number;
  setNumRequiredSignatures(value: number): void;

  getNumReadonlySignedAccounts(): number;
  setNumReadonlySignedAccounts(value: number): void;

  getNumReadonlyUnsignedAccounts(): number;
  setNumReadonlyUnsignedAccounts(value: number): void;

  getRecentBlockhash(): Uint8Array | string;
  getRecentBlockhash_asU8(): Uint8Array;
  getRecentBlockhash_asB64(): string;
  setRecentBlockhash(value: Uint8Array | string): void;

  clearSignaturesList(): void;
  getSignaturesList(): Array<Uint8Array | string>;
  getSignaturesList_asU8(): Array<Uint8Array>;
  getSignaturesList_asB64(): Array<string>;
  setSignaturesList(value: Array<Uint8Array | string>): void;
  addSignatures(value: Uint8Array | string, index?: number): Uint8Array | string;

  clearAccountKeysList(): void;
  getAccountKeysList(): Array<Uint8Array | string>;
  getAccountKeysList_asU8(): Array<Uint8Array>;
  getAccountKeysList_asB64(): Array<string>;
  setAccountKeysList(value: Array<Uint8Array | string>): void;
  addAccountKeys(value: Uint8Array | string, index?: number): Uint8Array | string;

  clearInstructionsList(): void;
  getInstructionsList(): Array<CompiledInstruction>;
  setInstructionsList(value: Array<CompiledInstruction>): void;
  addInstructions(value?: CompiledInstruction, index?: number): CompiledInstruction;

  clearAddressTableLookupsList(): void;
  getAddressTableLookupsList(): Array<MessageAddressTableLookup>;
  setAddressTableLookupsList(value: Array<MessageAddressTableLookup>): void;
  addAddressTableLookups(value?: MessageAddressTableLookup, index?: number): MessageAddressTableLookup;

  hasVersioned(): boolean;
  clearVersioned(): void;
  getVersioned(): google_protobuf_wrappers_pb.BoolValue | undefined;
  setVersioned(value?: google_protobuf_wrappers_pb.BoolValue): void;

  serializeBinary(): Uint8Array;
  toObject(includeInstance?: boolean): TransactionMessage.AsObject;
  static toObject(includeInstance: boolean, msg: TransactionMessage): TransactionMessage.AsObject;
  static extensions: {[key: number]: jspb.ExtensionFieldInfo<jspb.Message>};
  static extensionsBinary: {[key: number]: jspb.ExtensionFieldBinaryInfo<jspb.Message>};
  static serializeBinaryToWriter(message: TransactionMessage, writer: jspb.BinaryWriter): void;
  static deserializeBinary(bytes: Uint8Array): TransactionMessage;
  static deserializeBinaryFromReader(message: TransactionMessage, reader: jspb.BinaryReader): TransactionMessage;
}

export namespace TransactionMessage {
  export type AsObject = {
    slot: number,
    numRequiredSignatures: number,
    numReadonlySignedAccounts: number,
    numReadonlyUnsignedAccounts: number,
    recentBlockhash: Uint8Array | string,
    signaturesList: Array<Uint8Array | string>,
    accountKeysList: Array<Uint8Array | string>,
    instructionsList: Array<CompiledInstruction.AsObject>,
    addressTableLookupsList: Array<MessageAddressTableLookup.AsObject>,
    versioned?: google_protobuf_wrappers_pb.BoolValue.AsObject,
  }
}

export class CompiledInstruction extends jspb.Message {
  getProgramIdIndex(): number;
  setProgramIdIndex(value: number): void;

  getAccounts(): Uint8Array | string;
  getAccounts_asU8(): Uint8Array;
  getAccounts_asB64(): string;
  setAccounts(value: Uint8Array | string): void;

  getData(): Uint8Array | string;
  getData_asU8(): Uint8Array;
  getData_asB64(): string;
  setData(value: Uint8Array | string): void;

  serializeBinary(): Uint8Array;
  toObject(includeInstance?: boolean): CompiledInstruction.AsObject;
  static toObject(includeInstance: boolean, msg: CompiledInstruction): CompiledInstruction.AsObject;
  static extensions: {[key: number]: jspb.ExtensionFieldInfo<jspb.Message>};
  static extensionsBinary: {[key: number]: jspb.ExtensionFieldBinaryInfo<jspb.Message>};
  static serializeBinaryToWriter(message: CompiledInstruction, writer: jspb.BinaryWriter): void;
  static deserializeBinary(bytes: Uint8Array): CompiledInstruction;
  static deserializeBinaryFromReader(message: CompiledInstruction, reader: jspb.BinaryReader): CompiledInstruction;
}

export namespace CompiledInstruction {
  export type AsObject = {
    programIdIndex: number,
    accounts: Uint8Array | string,
    data: Uint8Array | string,
  }
}

export class MessageAddressTableLookup extends jspb.Message {
  getAccountKey(): Uint8Array | string;
  getAccountKey_asU8(): Uint8Array;
  getAccountKey_asB64(): string;
  setAccountKey(value: Uint8Array | string): void;

  getWritableIndexes(): Uint8Array | string;
  getWritableIndexes_asU8(): Uint8Array;
  getWritableIndexes_asB64(): string;
  setWritableIndexes(value: Uint8Array | string): void;

  getReadonlyIndexes(): Uint8Array | string;
  getReadonlyIndexes_asU8(): Uint8Array;
  getReadonlyIndexes_asB64(): string;
  setReadonlyIndexes(value: Uint8Array | string): void;

  serializeBinary(): Uint8Array;
  toObject(includeInstance?: boolean): MessageAddressTableLookup.AsObject;
  static toObject(includeInstance: boolean, msg: MessageAddressTableLookup): MessageAddressTableLookup.AsObject;
  static extensions: {[key: number]: jspb.ExtensionFieldInfo<jspb.Message>};
  static extensionsBinary: {[key: number]: jspb.ExtensionFieldBinaryInfo<jspb.Message>};
  static serializeBinaryToWriter(message: MessageAddressTableLookup, writer: jspb.BinaryWriter): void;
  static deserializeBinary(bytes: Uint8Array): MessageAddressTableLookup;
  static deserializeBinaryFromReader(message: MessageAddressTableLookup, reader: jspb.BinaryReader): MessageAddressTableLookup;
}

export namespace MessageAddressTableLookup {
  export type AsObject = {
    accountKey: Uint8Array | string,
    writableIndexes: Uint8Array | string,
    readonlyIndexes: Uint8Array | string,
  }
}

export class LoadedAddresses extends jspb.Message {
  clearWritableList(): void;
  getWritableList(): Array<Uint8Array | string>;
  getWritableList_asU8(): Array<Uint8Array>;
  getWritableList_asB64(): Array<string>;
  setWritableList(value: Array<Uint8Array | string>): void;
  addWritable(value: Uint8Array | string, index?: number): Uint8Array | string;

  clearReadonlyList(): void;
  getReadonlyList(): Array<Uint8Array | string>;
  getReadonlyList_asU8(): Array<Uint8Array>;
  getReadonlyList_asB64(): Array<string>;
  setReadonlyList(value: Array<Uint8Array | string>): void;
  addReadonly(value: Uint8Array | string, index?: number): Uint8Array | string;

  clearUnresolvedTablesList(): void;
  getUnresolvedTablesList(): Array<Uint8Array | string>;
  getUnresolvedTablesList_asU8(): Array<Uint8Array>;
  getUnresolvedTablesList_asB64(): Array<string>;
  setUnresolvedTablesList(value: Array<Uint8Array | string>): void;
  addUnresolvedTables(value: Uint8Array | string, index?: number): Uint8Array | string;

  serializeBinary(): Uint8Array;
  toObject(includeInstance?: boolean): LoadedAddresses.AsObject;
  static toObject(includeInstance: boolean, msg: LoadedAddresses): LoadedAddresses.AsObject;
  static extensions: {[key: number]: jspb.ExtensionFieldInfo<jspb.Message>};
  static extensionsBinary: {[key: number]: jspb.ExtensionFieldBinaryInfo<jspb.Message>};
  static serializeBinaryToWriter(message: LoadedAddresses, writer: jspb.BinaryWriter): void;
  static deserializeBinary(bytes: Uint8Array): LoadedAddresses;
  static deserializeBinaryFromReader(message: LoadedAddresses, reader: jspb.BinaryReader): LoadedAddresses;
}

export namespace LoadedAddresses {
  export type AsObject = {
    writableList: Array<Uint8Array | string>,
    readonlyList: Array<Uint8Array | string>,
    unresolvedTablesList: Array<Uint8Array | string>,
  }
}

export class Entry extends jspb.Message {
  getSlot(): number;
  setSlot(value: number): void;

  getIndex(): number;
  setIndex(value: number): void;

  getIndexKnown(): boolean;
  setIndexKnown(value: boolean): void;

  getStartingTransactionIndex(): number;
  setStartingTransactionIndex(value: number): void;

  getNumHashes(): number;
  setNumHashes(value: number): void;

  getHash(): Uint8Array | string;
  getHash_asU8(): Uint8Array;
  getHash_asB64(): string;
  setHash(value: Uint8Array | string): void;

  getTransactionCount(): number;
  setTransactionCount(value: number): void;

  clearSignaturesList(): void;
  getSignaturesList(): Array<Uint8Array | string>;
  getSignaturesList_asU8(): Array<Uint8Array>;
  getSignaturesList_asB64(): Array<string>;
  setSignaturesList(value: Array<Uint8Array | string>): void;
  addSignatures(value: Uint8Array | string, index?: number): Uint8Array | string;

  getBatchFirstShred(): number;
  setBatchFirstShred(value: number): void;

  getIndexInBatch(): number;
  setIndexInBatch(value: number): void;

  hasObservedAt(): boolean;
  clearObservedAt(): void;
  getObservedAt(): google_protobuf_timestamp_pb.Timestamp | undefined;
  setObservedAt(value?: google_protobuf_timestamp_pb.Timestamp): void;

  hasBlock(): boolean;
  clearBlock(): void;
  getBlock(): BlockRef | undefined;
  setBlock(value?: BlockRef): void;

  serializeBinary(): Uint8Array;
  toObject(includeInstance?: boolean): Entry.AsObject;
  static toObject(includeInstance: boolean, msg: Entry): Entry.AsObject;
  static extensions: {[key: number]: jspb.ExtensionFieldInfo<jspb.Message>};
  static extensionsBinary: {[key: number]: jspb.ExtensionFieldBinaryInfo<jspb.Message>};
  static serializeBinaryToWriter(message: Entry, writer: jspb.BinaryWriter): void;
  static deserializeBinary(bytes: Uint8Array): Entry;
  static deserializeBinaryFromReader(message: Entry, reader: jspb.BinaryReader): Entry;
}

export namespace Entry {
  export type AsObject = {
    slot: number,
    index: number,
    indexKnown: boolean,
    startingTransactionIndex: number,
    numHashes: number,
    hash: Uint8Array | string,
    transactionCount: number,
    signaturesList: Array<Uint8Array | string>,
    batchFirstShred: number,
    indexInBatch: number,
    observedAt?: google_protobuf_timestamp_pb.Timestamp.AsObject,
    block?: BlockRef.AsObject,
  }
}

export class SlotUpdate extends jspb.Message {
  getSlot(): number;
  setSlot(value: number): void;

  getStatus(): SlotStatusMap[keyof SlotStatusMap];
  setStatus(value: SlotStatusMap[keyof SlotStatusMap]): void;

  hasObservedAt(): boolean;
  clearObservedAt(): void;
  getObservedAt(): google_protobuf_timestamp_pb.Timestamp | undefined;
  setObservedAt(value?: google_protobuf_timestamp_pb.Timestamp): void;

  getDeadReason(): string;
  setDeadReason(value: string): void;

  hasBlock(): boolean;
  clearBlock(): void;
  getBlock(): BlockIdentity | undefined;
  setBlock(value?: BlockIdentity): void;

  serializeBinary(): Uint8Array;
  toObject(includeInstance?: boolean): SlotUpdate.AsObject;
  static toObject(includeInstance: boolean, msg: SlotUpdate): SlotUpdate.AsObject;
  static extensions: {[key: number]: jspb.ExtensionFieldInfo<jspb.Message>};
  static extensionsBinary: {[key: number]: jspb.ExtensionFieldBinaryInfo<jspb.Message>};
  static serializeBinaryToWriter(message: SlotUpdate, writer: jspb.BinaryWriter): void;
  static deserializeBinary(bytes: Uint8Array): SlotUpdate;
  static deserializeBinaryFromReader(message: SlotUpdate, reader: jspb.BinaryReader): SlotUpdate;
}

export namespace SlotUpdate {
  export type AsObject = {
    slot: number,
    status: SlotStatusMap[keyof SlotStatusMap],
    observedAt?: google_protobuf_timestamp_pb.Timestamp.AsObject,
    deadReason: string,
    block?: BlockIdentity.AsObject,
  }
}

export class BlockIdentity extends jspb.Message {
  getBlockId(): Uint8Array | string;
  getBlockId_asU8(): Uint8Array;
  getBlockId_asB64(): string;
  setBlockId(value: Uint8Array | string): void;

  getParentSlot(): number;
  setParentSlot(value: number): void;

  getParentBlockId(): Uint8Array | string;
  getParentBlockId_asU8(): Uint8Array;
  getParentBlockId_asB64(): string;
  setParentBlockId(value: Uint8Array | string): void;

  hasUpdateParent(): boolean;
  clearUpdateParent(): void;
  getUpdateParent(): UpdateParentRetraction | undefined;
  setUpdateParent(value?: UpdateParentRetraction): void;

  hasFooter(): boolean;
  clearFooter(): void;
  getFooter(): BlockFooter | undefined;
  setFooter(value?: BlockFooter): void;

  serializeBinary(): Uint8Array;
  toObject(includeInstance?: boolean): BlockIdentity.AsObject;
  static toObject(includeInstance: boolean, msg: BlockIdentity): BlockIdentity.AsObject;
  static extensions: {[key: number]: jspb.ExtensionFieldInfo<jspb.Message>};
  static extensionsBinary: {[key: number]: jspb.ExtensionFieldBinaryInfo<jspb.Message>};
  static serializeBinaryToWriter(message: BlockIdentity, writer: jspb.BinaryWriter): void;
  static deserializeBinary(bytes: Uint8Array): BlockIdentity;
  static deserializeBinaryFromReader(message: BlockIdentity, reader: jspb.BinaryReader): BlockIdentity;
}

export namespace BlockIdentity {
  export type AsObject = {
    blockId: Uint8Array | string,
    parentSlot: number,
    parentBlockId: Uint8Array | string,
    updateParent?: UpdateParentRetraction.AsObject,
    footer?: BlockFooter.AsObject,
  }
}

export class UpdateParentRetraction extends jspb.Message {
  getFecSetIndex(): number;
  setFecSetIndex(value: number): void;

  clearDiscardedSignaturesList(): void;
  getDiscardedSignaturesList(): Array<Uint8Array | string>;
  getDiscardedSignaturesList_asU8(): Array<Uint8Array>;
  getDiscardedSignaturesList_asB64(): Array<string>;
  setDiscardedSignaturesList(value: Array<Uint8Array | string>): void;
  addDiscardedSignatures(value: Uint8Array | string, index?: number): Uint8Array | string;

  getIncomplete(): boolean;
  setIncomplete(value: boolean): void;

  serializeBinary(): Uint8Array;
  toObject(includeInstance?: boolean): UpdateParentRetraction.AsObject;
  static toObject(includeInstance: boolean, msg: UpdateParentRetraction): UpdateParentRetraction.AsObject;
  static extensions: {[key: number]: jspb.ExtensionFieldInfo<jspb.Message>};
  static extensionsBinary: {[key: number]: jspb.ExtensionFieldBinaryInfo<jspb.Message>};
  static serializeBinaryToWriter(message: UpdateParentRetraction, writer: jspb.BinaryWriter): void;
  static deserializeBinary(bytes: Uint8Array): UpdateParentRetraction;
  static deserializeBinaryFromReader(message: UpdateParentRetraction, reader: jspb.BinaryReader): UpdateParentRetraction;
}

export namespace UpdateParentRetraction {
  export type AsObject = {
    fecSetIndex: number,
    discardedSignaturesList: Array<Uint8Array | string>,
    incomplete: boolean,
  }
}

export class BlockFooter extends jspb.Message {
  getBankHash(): Uint8Array | string;
  getBankHash_asU8(): Uint8Array;
  getBankHash_asB64(): string;
  setBankHash(value: Uint8Array | string): void;

  getProducerTimeNanos(): number;
  setProducerTimeNanos(value: number): void;

  getUserAgent(): Uint8Array | string;
  getUserAgent_asU8(): Uint8Array;
  getUserAgent_asB64(): string;
  setUserAgent(value: Uint8Array | string): void;

  getHasFinalizationCertificate(): boolean;
  setHasFinalizationCertificate(value: boolean): void;

  getHasNotarAggregate(): boolean;
  setHasNotarAggregate(value: boolean): void;

  getHasSkipRewardCertificate(): boolean;
  setHasSkipRewardCertificate(value: boolean): void;

  getHasNotarRewardCertificate(): boolean;
  setHasNotarRewardCertificate(value: boolean): void;

  serializeBinary(): Uint8Array;
  toObject(includeInstance?: boolean): BlockFooter.AsObject;
  static toObject(includeInstance: boolean, msg: BlockFooter): BlockFooter.AsObject;
  static extensions: {[key: number]: jspb.ExtensionFieldInfo<jspb.Message>};
  static extensionsBinary: {[key: number]: jspb.ExtensionFieldBinaryInfo<jspb.Message>};
  static serializeBinaryToWriter(message: BlockFooter, writer: jspb.BinaryWriter): void;
  static deserializeBinary(bytes: Uint8Array): BlockFooter;
  static deserializeBinaryFromReader(message: BlockFooter, reader: jspb.BinaryReader): BlockFooter;
}

export namespace BlockFooter {
  export type AsObject = {
    bankHash: Uint8Array | string,
    producerTimeNanos: number,
    userAgent: Uint8Array | string,
    hasFinalizationCertificate: boolean,
    hasNotarAggregate: boolean,
    hasSkipRewardCertificate: boolean,
    hasNotarRewardCertificate: boolean,
  }
}

export class Gap extends jspb.Message {
  getFromCursor(): Uint8Array | string;
  getFromCursor_asU8(): Uint8Array;
  getFromCursor_asB64(): string;
  setFromCursor(value: Uint8Array | string): void;

  getReason(): GapReasonMap[keyof GapReasonMap];
  setReason(value: GapReasonMap[keyof GapReasonMap]): void;

  getCount(): number;
  setCount(value: number): void;

  getFirstSlot(): number;
  setFirstSlot(value: number): void;

  getLastSlot(): number;
  setLastSlot(value: number): void;

  serializeBinary(): Uint8Array;
  toObject(includeInstance?: boolean): Gap.AsObject;
  static toObject(includeInstance: boolean, msg: Gap): Gap.AsObject;
  static extensions: {[key: number]: jspb.ExtensionFieldInfo<jspb.Message>};
  static extensionsBinary: {[key: number]: jspb.ExtensionFieldBinaryInfo<jspb.Message>};
  static serializeBinaryToWriter(message: Gap, writer: jspb.BinaryWriter): void;
  static deserializeBinary(bytes: Uint8Array): Gap;
  static deserializeBinaryFromReader(message: Gap, reader: jspb.BinaryReader): Gap;
}

export namespace Gap {
  export type AsObject = {
    fromCursor: Uint8Array | string,
    reason: GapReasonMap[keyof GapReasonMap],
    count: number,
    firstSlot: number,
    lastSlot: number,
  }
}

export class ReplayComplete extends jspb.Message {
  getReplayed(): number;
  setReplayed(value: number): void;

  serializeBinary(): Uint8Array;
  toObject(includeInstance?: boolean): ReplayComplete.AsObject;
  static toObject(includeInstance: boolean, msg: ReplayComplete): ReplayComplete.AsObject;
  static extensions: {[key: number]: jspb.ExtensionFieldInfo<jspb.Message>};
  static extensionsBinary: {[key: number]: jspb.ExtensionFieldBinaryInfo<jspb.Message>};
  static serializeBinaryToWriter(message: ReplayComplete, writer: jspb.BinaryWriter): void;
  static deserializeBinary(bytes: Uint8Array): ReplayComplete;
  static deserializeBinaryFromReader(message: ReplayComplete, reader: jspb.BinaryReader): ReplayComplete;
}

export namespace ReplayComplete {
  export type AsObject = {
    replayed: number,
  }
}

export class Heartbeat extends jspb.Message {
  getNewestSlot(): number;
  setNewestSlot(value: number): void;

  serializeBinary(): Uint8Array;
  toObject(includeInstance?: boolean): Heartbeat.AsObject;
  static toObject(includeInstance: boolean, msg: Heartbeat): Heartbeat.AsObject;
  static extensions: {[key: number]: jspb.ExtensionFieldInfo<jspb.Message>};
  static extensionsBinary: {[key: number]: jspb.ExtensionFieldBinaryInfo<jspb.Message>};
  static serializeBinaryToWriter(message: Heartbeat, writer: jspb.BinaryWriter): void;
  static deserializeBinary(bytes: Uint8Array): Heartbeat;
  static deserializeBinaryFromReader(message: Heartbeat, reader: jspb.BinaryReader): Heartbeat;
}

export namespace Heartbeat {
  export type AsObject = {
    newestSlot: number,
  }
}

export class FilterAck extends jspb.Message {
  getId(): string;
  setId(value: string): void;

  getStatus(): FilterAckStatusMap[keyof FilterAckStatusMap];
  setStatus(value: FilterAckStatusMap[keyof FilterAckStatusMap]): void;

  getReason(): string;
  setReason(value: string): void;

  getReasonCode(): string;
  setReasonCode(value: string): void;

  serializeBinary(): Uint8Array;
  toObject(includeInstance?: boolean): FilterAck.AsObject;
  static toObject(includeInstance: boolean, msg: FilterAck): FilterAck.AsObject;
  static extensions: {[key: number]: jspb.ExtensionFieldInfo<jspb.Message>};
  static extensionsBinary: {[key: number]: jspb.ExtensionFieldBinaryInfo<jspb.Message>};
  static serializeBinaryToWriter(message: FilterAck, writer: jspb.BinaryWriter): void;
  static deserializeBinary(bytes: Uint8Array): FilterAck;
  static deserializeBinaryFromReader(message: FilterAck, reader: jspb.BinaryReader): FilterAck;
}

export namespace FilterAck {
  export type AsObject = {
    id: string,
    status: FilterAckStatusMap[keyof FilterAckStatusMap],
    reason: string,
    reasonCode: string,
  }
}

export class Pong extends jspb.Message {
  getId(): number;
  setId(value: number): void;

  serializeBinary(): Uint8Array;
  toObject(includeInstance?: boolean): Pong.AsObject;
  static toObject(includeInstance: boolean, msg: Pong): Pong.AsObject;
  static extensions: {[key: number]: jspb.ExtensionFieldInfo<jspb.Message>};
  static extensionsBinary: {[key: number]: jspb.ExtensionFieldBinaryInfo<jspb.Message>};
  static serializeBinaryToWriter(message: Pong, writer: jspb.BinaryWriter): void;
  static deserializeBinary(bytes: Uint8Array): Pong;
  static deserializeBinaryFromReader(message: Pong, reader: jspb.BinaryReader): Pong;
}

export namespace Pong {
  export type AsObject = {
    id: number,
  }
}

export interface LagPolicyMap {
  LAG_POLICY_CLOSE: 0;
  LAG_POLICY_SKIP: 1;
}

export const LagPolicy: LagPolicyMap;

export interface TransactionEncodingMap {
  TRANSACTION_ENCODING_DEFAULT: 0;
  TRANSACTION_ENCODING_DECODED: 1;
  TRANSACTION_ENCODING_RAW: 2;
}

export const TransactionEncoding: TransactionEncodingMap;

export interface BlockRefSourceMap {
  BLOCK_REF_SOURCE_SHRED: 0;
  BLOCK_REF_SOURCE_HEADER: 1;
  BLOCK_REF_SOURCE_UPDATE_PARENT: 2;
}

export const BlockRefSource: BlockRefSourceMap;

export interface SlotStatusMap {
  SLOT_STATUS_UNSPECIFIED: 0;
  SLOT_FIRST_SHRED_RECEIVED: 1;
  SLOT_COMPLETED: 2;
  SLOT_PROCESSED: 3;
  SLOT_CONFIRMED: 4;
  SLOT_FINALIZED: 5;
  SLOT_DEAD: 6;
  SLOT_DECODED: 7;
}

export const SlotStatus: SlotStatusMap;

export interface GapReasonMap {
  GAP_REASON_UNSPECIFIED: 0;
  GAP_REASON_SLOW_CONSUMER: 1;
  GAP_REASON_RETENTION: 2;
}

export const GapReason: GapReasonMap;

export interface FilterAckStatusMap {
  FILTER_ACK_OK: 0;
  FILTER_ACK_INVALID: 1;
  FILTER_ACK_LIMIT_REACHED: 2;
  FILTER_ACK_RATE_LIMITED: 3;
  FILTER_ACK_UNKNOWN_FILTER: 4;
}

export const FilterAckStatus: FilterAckStatusMap;


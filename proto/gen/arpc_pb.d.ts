// package: arpc
// file: arpc.proto

import * as jspb from "google-protobuf";
import * as google_protobuf_timestamp_pb from "google-protobuf/google/protobuf/timestamp_pb";
import * as google_protobuf_wrappers_pb from "google-protobuf/google/protobuf/wrappers_pb";

export class SubscribeRequest extends jspb.Message {
  getTransactionsMap(): jspb.Map<string, SubscribeRequestFilterTransactions>;
  clearTransactionsMap(): void;
  hasPingId(): boolean;
  clearPingId(): void;
  getPingId(): number;
  setPingId(value: number): void;

  hasNewSeenSlots(): boolean;
  clearNewSeenSlots(): void;
  getNewSeenSlots(): boolean;
  setNewSeenSlots(value: boolean): void;

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
    transactionsMap: Array<[string, SubscribeRequestFilterTransactions.AsObject]>,
    pingId: number,
    newSeenSlots: boolean,
  }
}

export class SubscribeRequestFilterTransactions extends jspb.Message {
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

  serializeBinary(): Uint8Array;
  toObject(includeInstance?: boolean): SubscribeRequestFilterTransactions.AsObject;
  static toObject(includeInstance: boolean, msg: SubscribeRequestFilterTransactions): SubscribeRequestFilterTransactions.AsObject;
  static extensions: {[key: number]: jspb.ExtensionFieldInfo<jspb.Message>};
  static extensionsBinary: {[key: number]: jspb.ExtensionFieldBinaryInfo<jspb.Message>};
  static serializeBinaryToWriter(message: SubscribeRequestFilterTransactions, writer: jspb.BinaryWriter): void;
  static deserializeBinary(bytes: Uint8Array): SubscribeRequestFilterTransactions;
  static deserializeBinaryFromReader(message: SubscribeRequestFilterTransactions, reader: jspb.BinaryReader): SubscribeRequestFilterTransactions;
}

export namespace SubscribeRequestFilterTransactions {
  export type AsObject = {
    accountIncludeList: Array<string>,
    accountExcludeList: Array<string>,
    accountRequiredList: Array<string>,
  }
}

export class SubscribeResponse extends jspb.Message {
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
  getTransaction(): SubscribeResponseTransaction | undefined;
  setTransaction(value?: SubscribeResponseTransaction): void;

  hasPingId(): boolean;
  clearPingId(): void;
  getPingId(): number;
  setPingId(value: number): void;

  hasNewSlot(): boolean;
  clearNewSlot(): void;
  getNewSlot(): number;
  setNewSlot(value: number): void;

  serializeBinary(): Uint8Array;
  toObject(includeInstance?: boolean): SubscribeResponse.AsObject;
  static toObject(includeInstance: boolean, msg: SubscribeResponse): SubscribeResponse.AsObject;
  static extensions: {[key: number]: jspb.ExtensionFieldInfo<jspb.Message>};
  static extensionsBinary: {[key: number]: jspb.ExtensionFieldBinaryInfo<jspb.Message>};
  static serializeBinaryToWriter(message: SubscribeResponse, writer: jspb.BinaryWriter): void;
  static deserializeBinary(bytes: Uint8Array): SubscribeResponse;
  static deserializeBinaryFromReader(message: SubscribeResponse, reader: jspb.BinaryReader): SubscribeResponse;
}

export namespace SubscribeResponse {
  export type AsObject = {
    createdAt?: google_protobuf_timestamp_pb.Timestamp.AsObject,
    filtersList: Array<string>,
    transaction?: SubscribeResponseTransaction.AsObject,
    pingId: number,
    newSlot: number,
  }
}

export class SubscribeResponseTransaction extends jspb.Message {
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
  toObject(includeInstance?: boolean): SubscribeResponseTransaction.AsObject;
  static toObject(includeInstance: boolean, msg: SubscribeResponseTransaction): SubscribeResponseTransaction.AsObject;
  static extensions: {[key: number]: jspb.ExtensionFieldInfo<jspb.Message>};
  static extensionsBinary: {[key: number]: jspb.ExtensionFieldBinaryInfo<jspb.Message>};
  static serializeBinaryToWriter(message: SubscribeResponseTransaction, writer: jspb.BinaryWriter): void;
  static deserializeBinary(bytes: Uint8Array): SubscribeResponseTransaction;
  static deserializeBinaryFromReader(message: SubscribeResponseTransaction, reader: jspb.BinaryReader): SubscribeResponseTransaction;
}

export namespace SubscribeResponseTransaction {
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


import {
  InstructionErrorBorshIo, InstructionErrorCustom, TransactionErrorDuplicateInstruction, TransactionErrorInstructionError,
  TransactionErrorInsufficientFundsForRent, TransactionErrorProgramExecutionTemporarilyRestricted,
  type FailedTransactionMetadata,
} from 'litesvm/dist/internal';

// litesvm's transaction errors → the JSON a real node puts in `err` (serde's externally tagged enums:
// unit variants as strings, data variants as {"Name": data}) and the Display text a real node puts in the
// preflight error message ("Transaction simulation failed: <text>"). Index = the enum's discriminant in
// litesvm 1.4 (internal.d.ts), which follows agave's TransactionError / InstructionError order.

export type TxErrJson = string | Record<string, unknown>;

const TX_ERRORS = [
  'AccountInUse', 'AccountLoadedTwice', 'AccountNotFound', 'ProgramAccountNotFound', 'InsufficientFundsForFee',
  'InvalidAccountForFee', 'AlreadyProcessed', 'BlockhashNotFound', 'CallChainTooDeep', 'MissingSignatureForFee',
  'InvalidAccountIndex', 'SignatureFailure', 'InvalidProgramForExecution', 'SanitizeFailure', 'ClusterMaintenance',
  'AccountBorrowOutstanding', 'WouldExceedMaxBlockCostLimit', 'UnsupportedVersion', 'InvalidWritableAccount',
  'WouldExceedMaxAccountCostLimit', 'WouldExceedAccountDataBlockLimit', 'TooManyAccountLocks', 'AddressLookupTableNotFound',
  'InvalidAddressLookupTableOwner', 'InvalidAddressLookupTableData', 'InvalidAddressLookupTableIndex', 'InvalidRentPayingAccount',
  'WouldExceedMaxVoteCostLimit', 'WouldExceedAccountDataTotalLimit', 'MaxLoadedAccountsDataSizeExceeded', 'ResanitizationNeeded',
  'InvalidLoadedAccountsDataSizeLimit', 'UnbalancedTransaction', 'ProgramCacheHitMaxLimit', 'CommitCancelled',
] as const;

const IX_ERRORS = [
  'GenericError', 'InvalidArgument', 'InvalidInstructionData', 'InvalidAccountData', 'AccountDataTooSmall', 'InsufficientFunds',
  'IncorrectProgramId', 'MissingRequiredSignature', 'AccountAlreadyInitialized', 'UninitializedAccount', 'UnbalancedInstruction',
  'ModifiedProgramId', 'ExternalAccountLamportSpend', 'ExternalAccountDataModified', 'ReadonlyLamportChange', 'ReadonlyDataModified',
  'DuplicateAccountIndex', 'ExecutableModified', 'RentEpochModified', 'NotEnoughAccountKeys', 'AccountDataSizeChanged',
  'AccountNotExecutable', 'AccountBorrowFailed', 'AccountBorrowOutstanding', 'DuplicateAccountOutOfSync', 'InvalidError',
  'ExecutableDataModified', 'ExecutableLamportChange', 'ExecutableAccountNotRentExempt', 'UnsupportedProgramId', 'CallDepth',
  'MissingAccount', 'ReentrancyNotAllowed', 'MaxSeedLengthExceeded', 'InvalidSeeds', 'InvalidRealloc', 'ComputationalBudgetExceeded',
  'PrivilegeEscalation', 'ProgramEnvironmentSetupFailure', 'ProgramFailedToComplete', 'ProgramFailedToCompile', 'Immutable',
  'IncorrectAuthority', 'AccountNotRentExempt', 'InvalidAccountOwner', 'ArithmeticOverflow', 'UnsupportedSysvar', 'IllegalOwner',
  'MaxAccountsDataAllocationsExceeded', 'MaxAccountsExceeded', 'MaxInstructionTraceLengthExceeded',
  'BuiltinProgramsMustConsumeComputeUnits', 'BorshIoError',
] as const;

/** agave's Display texts for the errors clients meet most; the rest fall back to the variant name. */
const TX_TEXT: Record<string, string> = {
  AccountInUse: 'Account in use',
  AccountLoadedTwice: 'Account loaded twice',
  AccountNotFound: 'Attempt to debit an account but found no record of a prior credit.',
  ProgramAccountNotFound: 'Attempt to load a program that does not exist',
  InsufficientFundsForFee: 'Insufficient funds for fee',
  InvalidAccountForFee: 'This account may not be used to pay transaction fees',
  AlreadyProcessed: 'This transaction has already been processed',
  BlockhashNotFound: 'Blockhash not found',
  SignatureFailure: 'Transaction did not pass signature verification',
  SanitizeFailure: 'Transaction failed to sanitize accounts offsets correctly',
  InvalidProgramForExecution: 'Attempt to load a program that does not exist',
  UnsupportedVersion: 'Transaction version is unsupported',
  AddressLookupTableNotFound: 'Transaction loads an address table account that doesn\'t exist',
};
const IX_TEXT: Record<string, string> = {
  GenericError: 'generic instruction error',
  InvalidArgument: 'invalid program argument',
  InvalidInstructionData: 'invalid instruction data',
  InvalidAccountData: 'invalid account data for instruction',
  AccountDataTooSmall: 'account data too small for instruction',
  InsufficientFunds: 'insufficient funds for instruction',
  IncorrectProgramId: 'incorrect program id for instruction',
  MissingRequiredSignature: 'missing required signature for instruction',
  AccountAlreadyInitialized: 'instruction requires an uninitialized account',
  UninitializedAccount: 'instruction requires an initialized account',
  UnbalancedInstruction: 'sum of account balances before and after instruction do not match',
  ComputationalBudgetExceeded: 'Computational budget exceeded',
  ProgramFailedToComplete: 'Program failed to complete',
  NotEnoughAccountKeys: 'insufficient account keys for instruction',
  UnsupportedProgramId: 'Unsupported program id',
};

export interface TxError {
  json: TxErrJson;
  /** agave's Display text of the error. */
  text: string;
  /** Whether a real leader would put the transaction in its block (fee charged) rather than drop it. */
  lands: boolean;
}

function ixError(index: number, e: unknown): TxError {
  let json: TxErrJson;
  let text: string;
  if (e instanceof InstructionErrorCustom) {
    json = { Custom: e.code };
    text = `custom program error: 0x${e.code.toString(16)}`;
  } else if (e instanceof InstructionErrorBorshIo) {
    json = 'BorshIoError';
    text = 'Failed to serialize or deserialize account data';
  } else {
    const name = typeof e === 'number' ? IX_ERRORS[e] ?? 'InvalidError' : 'InvalidError';
    json = name;
    text = IX_TEXT[name] ?? name;
  }
  return { json: { InstructionError: [index, json] }, text: `Error processing Instruction ${index}: ${text}`, lands: true };
}

export function txError(failed: FailedTransactionMetadata): TxError {
  const e: unknown = failed.err();
  if (typeof e === 'number') {
    const name = TX_ERRORS[e] ?? 'SanitizeFailure';
    return { json: name, text: TX_TEXT[name] ?? name, lands: false };
  }
  if (e instanceof TransactionErrorInstructionError) return ixError(e.index, e.err());
  if (e instanceof TransactionErrorInsufficientFundsForRent) {
    return { json: { InsufficientFundsForRent: { account_index: e.accountIndex } }, text: `Transaction results in an account (${e.accountIndex}) with insufficient funds for rent`, lands: true };
  }
  if (e instanceof TransactionErrorDuplicateInstruction) {
    return { json: { DuplicateInstruction: e.index }, text: `Transaction contains a duplicate instruction (${e.index}) that is not allowed`, lands: true };
  }
  if (e instanceof TransactionErrorProgramExecutionTemporarilyRestricted) {
    return { json: { ProgramExecutionTemporarilyRestricted: { account_index: e.accountIndex } }, text: `Execution of the program referenced by account at index ${e.accountIndex} is temporarily restricted.`, lands: true };
  }
  return { json: 'SanitizeFailure', text: TX_TEXT.SanitizeFailure!, lands: false };
}

/** An error raised by the node itself before execution (blockhash age, duplicate signature). */
export function nodeError(name: 'BlockhashNotFound' | 'AlreadyProcessed' | 'SignatureFailure' | 'SanitizeFailure'): TxError {
  return { json: name, text: TX_TEXT[name]!, lands: false };
}

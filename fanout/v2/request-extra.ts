import type { TransactionFilter } from '../../proto/gen/stream_v2_pb';
import { isEmptyExtra, type FilterExtraSpec } from '../filter/compile-extra';

// TransactionFilter's fields beyond account lists (6–10: instructions, account_writable, account_signer, signature,
// vote) as plain data for the compiler (fanout/filter/compile-extra.ts validates them). undefined: none set.

export function readFilterExtra(f: TransactionFilter): FilterExtraSpec | undefined {
  const vote = f.getVote();
  const x: FilterExtraSpec = {
    instructions: f.getInstructionsList().map((i) => {
      const size = i.getDataSize();
      return {
        programId: i.getProgramId(),
        dataPrefix: i.getDataPrefix_asU8(),
        dataAt: i.getDataAtList().map((a) => ({ offset: a.getOffset(), bytes: a.getBytes_asU8() })),
        ...(size === undefined ? {} : { dataSize: size.getValue() }),
      };
    }),
    writable: f.getAccountWritableList(),
    signer: f.getAccountSignerList(),
    signature: f.getSignature(),
    ...(vote === undefined ? {} : { vote: vote.getValue() }),
  };
  return isEmptyExtra(x) ? undefined : x;
}

import { BoolValue, UInt32Value } from 'google-protobuf/google/protobuf/wrappers_pb';
import { DataBytes, InstructionFilter, TransactionFilter } from '../../../proto/gen/stream_v2_pb';

// A v2 TransactionFilter from a short description, as the tests of the filter parts write them.

export interface Ix {
  program: string;
  prefix?: number[];
  at?: Array<[number, number[]]>;
  size?: number;
}

export function filter(p: { include?: string[]; writable?: string[]; signer?: string[]; ixs?: Ix[]; signature?: string; vote?: boolean; matchLoaded?: boolean }): TransactionFilter {
  const f = new TransactionFilter();
  f.setAccountIncludeList(p.include ?? []);
  f.setAccountWritableList(p.writable ?? []);
  f.setAccountSignerList(p.signer ?? []);
  f.setMatchLoadedAddresses(p.matchLoaded ?? false);
  if (p.signature !== undefined) f.setSignature(p.signature);
  if (p.vote !== undefined) {
    const v = new BoolValue();
    v.setValue(p.vote);
    f.setVote(v);
  }
  f.setInstructionsList(
    (p.ixs ?? []).map((x) => {
      const i = new InstructionFilter();
      i.setProgramId(x.program);
      i.setDataPrefix(Uint8Array.from(x.prefix ?? []));
      i.setDataAtList(
        (x.at ?? []).map(([offset, bytes]) => {
          const d = new DataBytes();
          d.setOffset(offset);
          d.setBytes(Uint8Array.from(bytes));
          return d;
        }),
      );
      if (x.size !== undefined) {
        const v = new UInt32Value();
        v.setValue(x.size);
        i.setDataSize(v);
      }
      return i;
    }),
  );
  return f;
}

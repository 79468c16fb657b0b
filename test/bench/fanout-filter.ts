import bs58 from 'bs58';
import { FilterIndex } from '../../fanout/filter/filter-index';
import { updateFromRequest } from '../support/request-adapter';
import { decodeSubscribeUpdate } from '../../fanout/v1/request-wire';
import type { SubscribeUpdate } from '../../fanout/v1/request';
import { Session } from '../../fanout/v1/session';
import { deserializeSubscribeRequest, serializeSubscribeRequest, type SubscribeRequestInit } from '../../proto/service';
import { FakePort } from '../fanout/fake-port';
import { testKey58 } from '../fanout/support';
import type { BenchResult } from './stats';

// Server CPU (process.cpuUsage: user + system, all threads) for one maximum-size filter update (16 filters × 3 lists × 1,000 keys, ~2.2 MB on the wire), the
// path a request takes after grpc-js has its bytes: vet + decode the request, then Session.handle (charge,
// compile, index). Three cases: a map of all-new keys, the same map re-sent, the map with one filter changed.
// Reference, same run: bs58-decoding the 48,000 keys alone (what compiling cost per key before).

const FILTERS = 16;
const KEYS = 1000;

function request(salt: number, changed = -1): SubscribeRequestInit {
  const transactions: Record<string, { accountInclude: string[]; accountExclude: string[]; accountRequired: string[] }> = {};
  for (let f = 0; f < FILTERS; f++) {
    const s = f === changed ? salt + 7777 : salt;
    const list = (l: number): string[] => Array.from({ length: KEYS }, (_v, k) => testKey58(f * 3000 + l * 1000 + k, s));
    transactions[`filter-name-${f}`] = { accountInclude: list(0), accountExclude: list(1), accountRequired: list(2) };
  }
  return { transactions };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

export async function benchFanoutFilter(): Promise<BenchResult[]> {
  const ROUNDS = 7;
  const index = new FilterIndex<Session>();
  let now = 0;
  const session = new Session(1, new FakePort(), {
    limits: { maxFilters: 16, maxKeysPerList: 1000, maxFilterNameLen: 128, maxFilterUpdatesPerSec: 50, maxKeysPerStream: 48_000, maxBytes: 1 << 20, maxMessages: 100 },
    index,
    pingResponse: () => Buffer.alloc(0),
    now: () => (now += 1000),
    onEnd: () => undefined,
  });
  const wire = Array.from({ length: ROUNDS + 1 }, (_v, i) => serializeSubscribeRequest(request(i)));
  const changedOne = Array.from({ length: ROUNDS }, (_v, i) => serializeSubscribeRequest(request(ROUNDS, i % FILTERS)));
  const apply = (bytes: Buffer, decode: (b: Buffer) => SubscribeUpdate = decodeSubscribeUpdate): number => {
    // CPU time of this thread, not wall time: the machine is shared, and waiting for a core is not cost.
    const c0 = process.cpuUsage();
    session.handle(decode(bytes));
    const c = process.cpuUsage(c0);
    return (c.user + c.system) / 1000;
  };
  apply(wire[0]!); // warm up
  const fresh: number[] = [];
  for (let i = 1; i <= ROUNDS; i++) fresh.push(apply(wire[i]!));
  const resent: number[] = [];
  for (let i = 0; i < ROUNDS; i++) resent.push(apply(wire[ROUNDS]!));
  const oneChanged: number[] = [];
  for (let i = 0; i < ROUNDS; i++) oneChanged.push(apply(changedOne[i]!));
  if (session.isEnded || index.totalKeys !== 48_000) throw new Error('the updates were not applied');
  // Reference: the same all-new maps through the generated decoder (google-protobuf) and the string path.
  const generated = (b: Buffer): SubscribeUpdate => updateFromRequest(deserializeSubscribeRequest(b));
  const viaGenerated: number[] = [];
  for (let i = 1; i <= ROUNDS; i++) viaGenerated.push(apply(wire[i]!, generated));
  if (session.isEnded) throw new Error('session ended');

  const keys = Object.values(request(99).transactions!).flatMap((f) => [...f.accountInclude!, ...f.accountExclude!, ...f.accountRequired!]);
  const ref: number[] = [];
  for (let r = 0; r < 3; r++) {
    const c0 = process.cpuUsage();
    let n = 0;
    for (const k of keys) n += bs58.decodeUnsafe(k)!.length;
    if (n !== keys.length * 32) throw new Error('bs58 reference');
    const c = process.cpuUsage(c0);
    ref.push((c.user + c.system) / 1000);
  }
  return [
    {
      bench: 'fanout-filter',
      case: `max-size filter update (${FILTERS}×3×${KEYS} keys, ${(wire[0]!.length / 2 ** 20).toFixed(1)} MiB), median of ${ROUNDS}`,
      figures: {
        all_new_ms: median(fresh),
        resent_ms: median(resent),
        one_filter_changed_ms: median(oneChanged),
        ref_all_new_via_generated_decoder_ms: median(viaGenerated),
        ref_bs58_48k_keys_ms: median(ref),
      },
      note: 'server CPU once grpc-js has the bytes: decode the request (v1/request-wire.ts), charge, compile, index; aim < 20 ms. References: the same via google-protobuf + strings; bs58 alone',
    },
  ];
}

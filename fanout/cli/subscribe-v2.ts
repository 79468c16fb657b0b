// `meridian subscribe --v2`: a v2 stream (proto/stream_v2.proto) with one filter, printed one line per update.
//
//   tx <slot> <base58 signature> filters=<ids> cursor=<base64url>
//   slot <n> <status>
//   gap <reason> count=<n> from=<cursor> cursor=<cursor>
//   replay-complete replayed=<n> cursor=<cursor>
//   heartbeat newest=<slot> cursor=<cursor>            (--verbose only)
// --json prints one object per update with its seq and cursor. "subscribed" goes to stderr once the filter is
// acknowledged; a refused filter or an error status goes to stderr with exit 1. Resume a stream later with
// --from-cursor and the last cursor printed. A start the server cannot serve (OUT_OF_RANGE: older than the bus
// retains; FAILED_PRECONDITION cursor_other_log: a cursor of another log, e.g. before the service restarted) also
// prints the options that start from the oldest point the server named.
import * as grpc from '@grpc/grpc-js';
import bs58 from 'bs58';
import { Timestamp } from 'google-protobuf/google/protobuf/timestamp_pb';
import { UsageError, noPositionals, type ParsedArgs } from '../../infra/base/args';
import { BoolValue } from 'google-protobuf/google/protobuf/wrappers_pb';
import { FilterAdd, FilterAckStatus, GapReason, InstructionFilter, LagPolicy, SlotStatus, Start, SubscribeRequest, TransactionFilter, type SubscribeUpdate } from '../../proto/gen/stream_v2_pb';
import { openV2Stream } from '../../proto/service-v2';
import { cursorText, parseCursorText } from '../v2/cursor';

const DEFAULT_URL = '127.0.0.1:20202';
const SLOT_STATUS = new Map(Object.entries(SlotStatus).map(([k, v]) => [v, k.replace(/^SLOT_/, '').toLowerCase()]));
const GAP_REASON = new Map(Object.entries(GapReason).map(([k, v]) => [v, k.replace(/^GAP_REASON_/, '').toLowerCase()]));

export function buildV2Start(args: ParsedArgs): Start {
  const s = new Start();
  const from = ['from-slot', 'from-cursor', 'from-time'].filter((o) => args.get(o) !== undefined);
  if (from.length > 1) throw new UsageError('give at most one of --from-slot, --from-cursor, --from-time');
  const slot = args.get('from-slot');
  if (slot !== undefined) {
    if (!/^\d{1,19}$/.test(slot)) throw new UsageError('--from-slot must be a slot number');
    s.setSlot(Number(slot));
  }
  const cursor = args.get('from-cursor');
  if (cursor !== undefined) {
    const c = parseCursorText(cursor);
    if (!c.ok) throw new UsageError(`--from-cursor must be a cursor as printed (base64url): ${c.reason}`);
    s.setCursor(Buffer.from(cursor, 'base64url'));
  }
  const time = args.get('from-time');
  if (time !== undefined) {
    const ms = Date.parse(time);
    if (Number.isNaN(ms)) throw new UsageError('--from-time must be an ISO-8601 time');
    const t = new Timestamp();
    t.setSeconds(Math.floor(ms / 1000));
    t.setNanos((ms % 1000) * 1e6);
    s.setTime(t);
  }
  if (args.bool('skip')) s.setLagPolicy(LagPolicy.LAG_POLICY_SKIP);
  s.setSlots(args.bool('slots'));
  return s;
}

/**
 * The one filter of the command line. `--data-prefix` pairs with `--program` in order (the n-th prefix is the
 * n-th program's); a program without one matches any data. Values are checked by the server (FilterAck).
 */
export function buildV2Filter(args: ParsedArgs): TransactionFilter {
  const f = new TransactionFilter();
  f.setAccountIncludeList(args.all('include'));
  f.setAccountExcludeList(args.all('exclude'));
  f.setAccountRequiredList(args.all('required'));
  f.setAccountWritableList(args.all('writable'));
  f.setAccountSignerList(args.all('signer'));
  f.setMatchLoadedAddresses(args.bool('match-loaded'));
  const programs = args.all('program');
  const prefixes = args.all('data-prefix');
  if (prefixes.length > programs.length) throw new UsageError('each --data-prefix follows the --program it is for');
  f.setInstructionsList(
    programs.map((p, i) => {
      const ix = new InstructionFilter();
      ix.setProgramId(p);
      const hex = prefixes[i] ?? '';
      if (!/^(?:[0-9a-fA-F]{2})*$/.test(hex.replace(/^0x/, ''))) throw new UsageError(`--data-prefix must be hex bytes (e.g. 02000000): ${JSON.stringify(hex)}`);
      ix.setDataPrefix(Buffer.from(hex.replace(/^0x/, ''), 'hex'));
      return ix;
    }),
  );
  const sig = args.get('signature');
  if (sig !== undefined) f.setSignature(sig);
  const vote = args.get('vote');
  if (vote !== undefined) {
    if (vote !== 'true' && vote !== 'false') throw new UsageError('--vote must be true or false');
    const v = new BoolValue();
    v.setValue(vote === 'true');
    f.setVote(v);
  }
  return f;
}

export function formatUpdate(u: SubscribeUpdate, opts: { json: boolean; verbose: boolean }): string | undefined {
  const cursor = cursorText(u.getCursor_asU8());
  const seq = u.getSeq();
  if (u.hasTransaction()) {
    const t = u.getTransaction()!;
    const signature = bs58.encode(t.getSignature_asU8());
    const filters = u.getFiltersList();
    return opts.json ? JSON.stringify({ seq, cursor, slot: t.getSlot(), signature, filters }) : `tx ${t.getSlot()} ${signature} filters=${filters.join(',')} cursor=${cursor}`;
  }
  if (u.hasSlot()) {
    const s = u.getSlot()!;
    const status = SLOT_STATUS.get(s.getStatus()) ?? String(s.getStatus());
    const dead = s.getDeadReason();
    if (opts.json) return JSON.stringify({ seq, cursor, slot: s.getSlot(), status, ...(dead === '' ? {} : { deadReason: dead }) });
    return dead === '' ? `slot ${s.getSlot()} ${status}` : `slot ${s.getSlot()} ${status} (${dead})`;
  }
  if (u.hasGap()) {
    const g = u.getGap()!;
    const reason = GAP_REASON.get(g.getReason()) ?? String(g.getReason());
    const from = cursorText(g.getFromCursor_asU8());
    return opts.json ? JSON.stringify({ seq, cursor, gap: { reason, count: g.getCount(), fromCursor: from } }) : `gap ${reason} count=${g.getCount()} from=${from} cursor=${cursor}`;
  }
  if (u.hasReplayComplete()) {
    const n = u.getReplayComplete()!.getReplayed();
    return opts.json ? JSON.stringify({ seq, cursor, replayComplete: { replayed: n } }) : `replay-complete replayed=${n} cursor=${cursor}`;
  }
  if (u.hasHeartbeat() && opts.verbose) {
    const n = u.getHeartbeat()!.getNewestSlot();
    return opts.json ? JSON.stringify({ seq, cursor, heartbeat: { newestSlot: n } }) : `heartbeat newest=${n} cursor=${cursor}`;
  }
  return undefined;
}

/** `--from-cursor C` (or `--from-slot N`) for the oldest point an OUT_OF_RANGE or cursor_other_log status names. */
export function oldestHint(s: Pick<grpc.StatusObject, 'code' | 'details'>): string | undefined {
  if (s.code !== grpc.status.OUT_OF_RANGE && s.code !== grpc.status.FAILED_PRECONDITION) return undefined;
  const m = /(?:oldest available|oldest point): cursor ([A-Za-z0-9_-]+)(?:, slot (\d+))?/.exec(s.details);
  if (m === null) return undefined;
  return `--from-cursor ${m[1]}${m[2] === undefined ? '' : ` (or --from-slot ${m[2]})`}`;
}

function codeName(code: number): string {
  return (Object.entries(grpc.status).find(([, v]) => v === code)?.[0] ?? 'UNKNOWN') + ` (${code})`;
}

export async function runV2(args: ParsedArgs): Promise<number> {
  noPositionals(args);
  const address = (args.get('url') ?? DEFAULT_URL).replace(/^http:\/\//, '').replace(/\/+$/, '');
  if (!/^(\[[0-9a-fA-F:.]+\]|[^:/\s]+):\d{1,5}$/.test(address)) throw new UsageError('--url must be HOST:PORT');
  const id = args.get('filter-name') ?? 'cli';
  if (id === '') throw new UsageError('--filter-name must not be empty');
  const start = buildV2Start(args);
  const opts = { json: args.bool('json'), verbose: args.bool('verbose') };
  const metadata = new grpc.Metadata();
  const token = args.get('token');
  if (token !== undefined) metadata.set('x-token', token);
  const call = openV2Stream(address, { metadata });

  return new Promise<number>((resolve) => {
    let stopping = false;
    let refused = false;
    const stop = (): void => {
      stopping = true;
      call.cancel();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    call.on('data', (u: SubscribeUpdate) => {
      if (u.hasFilterAck()) {
        const a = u.getFilterAck()!;
        if (a.getStatus() === FilterAckStatus.FILTER_ACK_OK) process.stderr.write(`subscribed to ${address}\n`);
        else {
          refused = true;
          process.stderr.write(`meridian subscribe: filter ${a.getId()} refused (${a.getReasonCode()}): ${a.getReason()}\n`);
          call.cancel();
        }
        return;
      }
      const line = formatUpdate(u, opts);
      if (line !== undefined && !process.stdout.write(line + '\n')) {
        call.pause();
        process.stdout.once('drain', () => call.resume());
      }
    });
    call.on('error', () => {});
    call.once('status', (s: grpc.StatusObject) => {
      process.removeListener('SIGINT', stop);
      process.removeListener('SIGTERM', stop);
      if (refused) return resolve(1);
      if (stopping && s.code === grpc.status.CANCELLED) return resolve(0);
      const details = s.details === '' ? '' : `: ${s.details}`;
      process.stderr.write(`meridian subscribe: stream ended ${codeName(s.code)}${details}\n`);
      const hint = oldestHint(s);
      if (hint !== undefined) process.stderr.write(`meridian subscribe: to start from the oldest point the server holds: ${hint}\n`);
      resolve(s.code === grpc.status.OK ? 0 : 1);
    });
    const f = buildV2Filter(args);
    const add = new FilterAdd();
    add.setId(id);
    add.setFilter(f);
    const r1 = new SubscribeRequest();
    r1.setAddFilter(add);
    call.write(r1);
    const r2 = new SubscribeRequest();
    r2.setStart(start);
    call.write(r2);
  });
}

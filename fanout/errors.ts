import { Metadata, status as Status, type StatusObject } from '@grpc/grpc-js';
import { BinaryWriter } from 'google-protobuf';

// The streaming surface's error registry (STYLE habit 7): every status a Subscribe stream can end with is a row
// here — gRPC code, a stable machine reason, whether retrying unchanged can help, and a detail template with
// typed context. Nothing else in fanout/ builds a status by hand.
//
// The reason travels three ways, so any client can read it:
//   - inside the details string (the contract: "RESOURCE_EXHAUSTED, reason subscribe_rate_limit");
//   - as google.rpc.Status{details: [google.rpc.ErrorInfo{reason, domain}]} in `grpc-status-details-bin`
//     (the standard rich-error trailer; grpc-js and other stacks surface it as trailing metadata);
//   - as the plain trailer `x-error-reason` for clients that do not decode the binary one.
//
// Where the contract is silent:
//   - An egress IP that is not allowlisted fails with PERMISSION_DENIED right after the stream opens (the
//     caller is identified by its address but not allowed; UNAUTHENTICATED is kept for a bad credential).
//   - A slow consumer gets DATA_LOSS (compat.md: clients treat it as recoverable), marked retriable.

export const ERROR_DOMAIN = 'stream.meridian';
export const REASON_TRAILER = 'x-error-reason';
const STATUS_DETAILS_TRAILER = 'grpc-status-details-bin';
const ERROR_INFO_TYPE_URL = 'type.googleapis.com/google.rpc.ErrorInfo';

/** Longest client-supplied text echoed into a detail (a key or a filter name). */
const ECHO_MAX = 64;

function echo(s: string): string {
  return JSON.stringify(s.length > ECHO_MAX ? `${s.slice(0, ECHO_MAX)}…` : s);
}

function slowWhat(c: { limit: 'bytes' | 'messages' | 'lag' | 'budget'; max: number }): string {
  if (c.limit === 'lag') return `oldest queued message older than ${c.max} ms`;
  if (c.limit === 'budget') return `send queues of all streams reached the server's ${c.max}-byte budget and this stream lagged most`;
  return `send queue exceeded ${c.max} ${c.limit}`;
}

export type ListKind = 'account_include' | 'account_exclude' | 'account_required' | 'account_writable' | 'account_signer' | `instructions[${number}].program_id`;

interface Row<C> {
  code: Status;
  reason: string;
  retriable: boolean;
  detail: (c: C) => string;
  /** After this status the server closes the stream's connection (GOAWAY, then close): the contract says so. */
  closesConnection?: true;
}

function row<C>(r: Row<C>): Row<C> {
  return r;
}

export const STREAM_ERRORS = {
  invalidPubkey: row<{ filter: string; list: ListKind; index: number; key: string; why: string }>({
    code: Status.INVALID_ARGUMENT,
    reason: 'invalid_pubkey',
    retriable: false,
    detail: (c) => `invalid public key in filter ${echo(c.filter)} ${c.list}[${c.index}] ${echo(c.key)}: ${c.why}`,
  }),
  tooManyFilters: row<{ count: number; max: number }>({
    code: Status.INVALID_ARGUMENT,
    reason: 'too_many_filters',
    retriable: false,
    detail: (c) => `too many transaction filters: ${c.count} (at most ${c.max})`,
  }),
  filterNameTooLong: row<{ filter: string; length: number; max: number }>({
    code: Status.INVALID_ARGUMENT,
    reason: 'filter_name_too_long',
    retriable: false,
    detail: (c) => `filter name ${echo(c.filter)} is ${c.length} characters (at most ${c.max})`,
  }),
  tooManyKeys: row<{ filter: string; list: ListKind; count: number; max: number }>({
    code: Status.INVALID_ARGUMENT,
    reason: 'too_many_keys',
    retriable: false,
    detail: (c) => `filter ${echo(c.filter)} ${c.list} has ${c.count} keys (at most ${c.max})`,
  }),
  tooManyKeysTotal: row<{ count: number; max: number }>({
    code: Status.INVALID_ARGUMENT,
    reason: 'too_many_keys',
    retriable: false,
    detail: (c) => `filter map has ${c.count} keys in all (at most ${c.max} per stream)`,
  }),
  subscribeRateLimit: row<{ max: number; unit?: 'keys' }>({
    code: Status.RESOURCE_EXHAUSTED,
    reason: 'subscribe_rate_limit',
    retriable: false,
    detail: (c) =>
      c.unit === 'keys'
        ? `subscribe_rate_limit: filter updates carrying more than ${c.max} keys per second; slow down and open a new stream`
        : `subscribe_rate_limit: more than ${c.max} filter-update messages per second; slow down and open a new stream`,
  }),
  filterCapacity: row<{ max: number; busy?: boolean }>({
    code: Status.RESOURCE_EXHAUSTED,
    reason: 'filter_capacity',
    retriable: true,
    detail: (c) =>
      c.busy === true
        ? 'the server is compiling its maximum of filter keys per second for all streams; retry later or on another instance'
        : `the server holds its maximum of ${c.max} filter keys for all streams; retry later or on another instance`,
  }),
  tooManyStreams: row<{ per: 'connection' | 'ip' | 'server'; max: number }>({
    code: Status.RESOURCE_EXHAUSTED,
    reason: 'too_many_streams',
    retriable: false,
    detail: (c) => (c.per === 'server' ? `the server holds its maximum of ${c.max} streams; retry later or on another instance` : `too many streams on this ${c.per === 'ip' ? 'IP address' : 'connection'} (at most ${c.max}); close one first`),
  }),
  unauthenticated: row<{ why: 'missing' | 'unknown' }>({
    code: Status.UNAUTHENTICATED,
    reason: 'invalid_token',
    retriable: false,
    detail: (c) => (c.why === 'missing' ? 'x-token metadata is required' : 'x-token is not valid'),
  }),
  ipNotAllowlisted: row<Record<string, never>>({
    code: Status.PERMISSION_DENIED,
    reason: 'ip_not_allowlisted',
    retriable: false,
    detail: () => 'egress IP is not allowlisted; register the real public egress address',
  }),
  ppsRequirement: row<{ pps: number; required: number }>({
    code: Status.PERMISSION_DENIED,
    reason: 'pps_requirement',
    retriable: false,
    // The contract fixes the prefix; clients match on it.
    detail: (c) => `PPS limit requirement not met: the rental has ${c.pps} PPS, this endpoint requires ${c.required}`,
    // service.md Errors/Streaming: "The server then closes the connection." (Reconnecting alone does not clear it.)
    closesConnection: true,
  }),
  slowConsumer: row<{ limit: 'bytes' | 'messages' | 'lag' | 'budget'; max: number }>({
    code: Status.DATA_LOSS,
    reason: 'slow_consumer',
    retriable: true,
    detail: (c) => `slow consumer: ${slowWhat(c)}; reconnect and reconcile the gap through JSON-RPC`,
  }),
  // ---- v2 (proto/stream_v2.proto) ----
  // TransactionFilter's instruction, role, signature and vote parts (fanout/filter/compile-extra.ts): acknowledged
  // with FILTER_ACK_INVALID (malformed) or FILTER_ACK_LIMIT_REACHED (a limit), the stream stays open.
  invalidSignature: row<{ filter: string; value: string; why: string }>({
    code: Status.INVALID_ARGUMENT,
    reason: 'invalid_signature',
    retriable: false,
    detail: (c) => `invalid signature in filter ${echo(c.filter)} ${echo(c.value)}: ${c.why}`,
  }),
  invalidInstructionFilter: row<{ filter: string; index: number; why: string }>({
    code: Status.INVALID_ARGUMENT,
    reason: 'invalid_instruction_filter',
    retriable: false,
    detail: (c) => `invalid instruction filter in filter ${echo(c.filter)} instructions[${c.index}]: ${c.why}`,
  }),
  dataPrefixTooLong: row<{ filter: string; index: number; length: number; max: number }>({
    code: Status.INVALID_ARGUMENT,
    reason: 'data_prefix_too_long',
    retriable: false,
    detail: (c) => `filter ${echo(c.filter)} instructions[${c.index}].data_prefix is ${c.length} bytes (at most ${c.max})`,
  }),
  dataBytesTooLong: row<{ filter: string; index: number; length: number; max: number }>({
    code: Status.INVALID_ARGUMENT,
    reason: 'data_bytes_too_long',
    retriable: false,
    detail: (c) => `filter ${echo(c.filter)} instructions[${c.index}].data_at holds ${c.length} bytes in all (at most ${c.max})`,
  }),
  tooManyDataAt: row<{ filter: string; index: number; count: number; max: number }>({
    code: Status.INVALID_ARGUMENT,
    reason: 'too_many_data_at',
    retriable: false,
    detail: (c) => `filter ${echo(c.filter)} instructions[${c.index}] has ${c.count} data_at entries (at most ${c.max})`,
  }),
  tooManyInstructionFilters: row<{ filter?: string; count: number; max: number }>({
    code: Status.INVALID_ARGUMENT,
    reason: 'too_many_instruction_filters',
    retriable: false,
    detail: (c) => (c.filter === undefined ? `filters would hold ${c.count} instruction filters (at most ${c.max} per stream)` : `filter ${echo(c.filter)} has ${c.count} instruction filters (at most ${c.max})`),
  }),
  outOfRange: row<{ what: string; oldest: string }>({
    code: Status.OUT_OF_RANGE,
    reason: 'out_of_range',
    retriable: false,
    detail: (c) => `start ${c.what} is older than the bus retains; oldest available: ${c.oldest}`,
  }),
  cursorOtherLog: row<{ why: string; oldest: string }>({
    // Not OUT_OF_RANGE: nothing of this log was dropped; the cursor's offsets are positions in another one (the
    // embedded bus restarted, a Kafka topic recreated), so no replay from them can be right. Start anew.
    code: Status.FAILED_PRECONDITION,
    reason: 'cursor_other_log',
    retriable: false,
    detail: (c) => `cursor is not a position in the log this server reads: ${c.why}; start from a slot, a time or this log's oldest point: ${c.oldest}`,
  }),
  invalidStart: row<{ why: string }>({
    code: Status.INVALID_ARGUMENT,
    reason: 'invalid_start',
    retriable: false,
    detail: (c) => `invalid start: ${c.why}`,
  }),
  invalidRequest: row<{ why: string }>({
    code: Status.INVALID_ARGUMENT,
    reason: 'invalid_request',
    retriable: false,
    detail: (c) => `invalid request: ${c.why}`,
  }),
  tooManyReplays: row<{ max: number }>({
    code: Status.RESOURCE_EXHAUSTED,
    reason: 'too_many_replays',
    retriable: true,
    detail: (c) => `the server runs its maximum of ${c.max} replays; retry later or on another instance`,
  }),
  laggedClose: row<{ limit: 'bytes' | 'messages' | 'lag' | 'budget'; max: number; cursor: string }>({
    code: Status.DATA_LOSS,
    reason: 'slow_consumer',
    retriable: true,
    detail: (c) => `slow consumer: ${slowWhat(c)}; resume from cursor ${c.cursor} (the last update written; trailer x-resume-cursor)`,
  }),
  replayFailed: row<{ why: string }>({
    code: Status.UNAVAILABLE,
    reason: 'replay_failed',
    retriable: true,
    detail: (c) => `replay from the bus failed: ${c.why}; resume from your last cursor`,
  }),
  shuttingDown: row<Record<string, never>>({
    code: Status.UNAVAILABLE,
    reason: 'shutting_down',
    retriable: true,
    detail: () => 'server is shutting down; reconnect',
  }),
} as const;

export type StreamErrorKind = keyof typeof STREAM_ERRORS;

/** Why a stream ended, for the disconnect counter (v1 and v2 alike). */
export type EndReason = 'client' | 'server_close' | StreamErrorKind;
type ContextOf<K extends StreamErrorKind> = (typeof STREAM_ERRORS)[K] extends Row<infer C> ? C : never;

/** A status ready for grpc-js (`call.emit('error', e)`), plus the registry row it came from. */
export interface StreamError extends StatusObject {
  kind: StreamErrorKind;
  reason: string;
  retriable: boolean;
  /** The transport closes the connection after this status (GOAWAY, then close), other streams on it included. */
  closesConnection: boolean;
}

export function streamError<K extends StreamErrorKind>(kind: K, context: ContextOf<K>): StreamError {
  const r = STREAM_ERRORS[kind] as Row<ContextOf<K>>;
  const details = r.detail(context);
  const metadata = new Metadata();
  metadata.set(REASON_TRAILER, r.reason);
  metadata.set(STATUS_DETAILS_TRAILER, statusDetails(r.code, details, r.reason));
  return { kind, code: r.code, details, metadata, reason: r.reason, retriable: r.retriable, closesConnection: r.closesConnection === true };
}

/** Narrowing helper: is this a registry error (and, optionally, of this kind)? */
export function isStreamError(e: unknown, kind?: StreamErrorKind): e is StreamError {
  if (typeof e !== 'object' || e === null || !('kind' in e) || !('code' in e)) return false;
  const k = (e as { kind: unknown }).kind;
  return typeof k === 'string' && k in STREAM_ERRORS && (kind === undefined || k === kind);
}

/** google.rpc.Status { code=1, message=2, details=3: Any { type_url=1, value=2: ErrorInfo { reason=1, domain=2 } } }. */
function statusDetails(code: number, message: string, reason: string): Buffer {
  const info = new BinaryWriter();
  info.writeString(1, reason);
  info.writeString(2, ERROR_DOMAIN);
  const infoBytes = info.getResultBuffer();
  const w = new BinaryWriter();
  w.writeInt32(1, code);
  w.writeString(2, message);
  w.writeMessage(3, infoBytes, (bytes: Uint8Array, any: BinaryWriter) => {
    any.writeString(1, ERROR_INFO_TYPE_URL);
    any.writeBytes(2, bytes);
  });
  return Buffer.from(w.getResultBuffer());
}

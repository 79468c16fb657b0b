// `meridian subscribe`: open a v1 stream, send one named filter, print one line per response.
//
//   tx <slot> <base58 signature> filters=<a,b>      (--json: {"slot","signature","filters","accountKeys"})
//   slot <n>
//   ping <id>                                        (--verbose only)
// With --json, slot and ping lines are {"newSlot":n} and {"pingId":n}.
//
// Right after the filter the client sends a ping with SUBSCRIBED_PING_ID: the server handles a stream's requests in
// order, so its reply proves the filter is in place; then "subscribed" goes to stderr (scripts wait for it).
// The stream's end status goes to stderr; errors exit 1, SIGINT/SIGTERM end cleanly with 0. The token is sent as
// x-token metadata and never printed.
import * as grpc from '@grpc/grpc-js';
import bs58 from 'bs58';
import { UsageError, noPositionals, parseCommand, type CommandSpec } from '../../infra/base/args';
import type { SubscribeResponse } from '../../proto/gen/arpc_pb';
import { SERVICE_CHOICES, openSubscribeStream, type ServiceChoice, type SubscribeRequestInit } from '../../proto/service';

const DEFAULT_URL = '127.0.0.1:20202';
const DEFAULT_FILTER_NAME = 'cli';
/** Heartbeats are ping_id 0; this id marks the confirmation ping. */
export const SUBSCRIBED_PING_ID = 0x5ab;

export const SUBSCRIBE_SPEC: CommandSpec = {
  command: 'meridian subscribe',
  summary: 'Open a v1 transaction stream, send one named filter, and print one line per response.',
  options: [
    { name: 'include', value: 'KEY', multi: true, help: 'match transactions that touch this base58 account (any of them)' },
    { name: 'exclude', value: 'KEY', multi: true, help: 'skip transactions that touch this account' },
    { name: 'required', value: 'KEY', multi: true, help: 'match only transactions that touch all of these accounts' },
    { name: 'slots', help: 'also print a line per new slot' },
    { name: 'url', value: 'HOST:PORT', help: 'the stream address', default: DEFAULT_URL },
    { name: 'token', value: 'TOKEN', help: 'sent as x-token metadata (never printed)' },
    { name: 'filter-name', value: 'NAME', help: 'the filter\'s name, echoed in each response', default: DEFAULT_FILTER_NAME },
    { name: 'service', value: Object.keys(SERVICE_CHOICES).join('|'), help: 'the gRPC service to call', default: 'StreamService' },
    { name: 'json', help: 'print JSON lines ({"slot","signature","filters","accountKeys"}, {"newSlot"}, {"pingId"})' },
    { name: 'verbose', help: 'also print heartbeat pings' },
    { name: 'v2', help: 'use the v2 stream (meridian.stream.v2.StreamV2): cursors, resume, gap notices' },
    { name: 'from-slot', value: 'N', help: 'v2: replay from this slot, then live' },
    { name: 'from-cursor', value: 'C', help: 'v2: resume from this cursor (base64url, as printed), then live' },
    { name: 'from-time', value: 'ISO', help: 'v2: replay from this time (ISO-8601), then live' },
    { name: 'skip', help: 'v2: lag policy skip (gap notices) instead of close' },
    { name: 'program', value: 'P', multi: true, help: 'v2: match transactions with a top-level instruction calling this program (any of them)' },
    { name: 'data-prefix', value: 'HEX', multi: true, help: 'v2: the n-th --program\'s instruction data starts with these bytes (hex)' },
    { name: 'writable', value: 'KEY', multi: true, help: 'v2: match only transactions that hold all of these accounts writable' },
    { name: 'signer', value: 'KEY', multi: true, help: 'v2: match only transactions signed by all of these accounts' },
    { name: 'signature', value: 'SIG', help: 'v2: follow the transaction with this (first) signature, base58' },
    { name: 'vote', value: 'true|false', help: 'v2: only vote transactions (true), or none of them (false)' },
    { name: 'match-loaded', help: 'v2: also match addresses loaded through lookup tables (and print them)' },
  ],
  notes: `With no --include/--exclude/--required the filter matches every transaction.
"subscribed" goes to stderr once the filter is in place; the stream's end status goes to stderr.
Exit 0 on Ctrl-C or a clean end, 1 when the stream ends with an error, 2 on bad options.
--v2 prints "tx <slot> <signature> filters=<ids> cursor=<c>", "slot <n> <status>", "gap …" and "replay-complete" lines
(--json: one JSON object per update with its seq and cursor); resume later with --from-cursor <the last cursor>.`,
};

export interface SubscribeOptions {
  address: string;
  service: ServiceChoice;
  token: string | undefined;
  request: SubscribeRequestInit;
  json: boolean;
  verbose: boolean;
}

/** Turns argv into options; throws UsageError (or HelpRequested). Exported for tests. */
export function parseSubscribeArgs(argv: string[]): SubscribeOptions {
  const args = parseCommand(argv, SUBSCRIBE_SPEC);
  noPositionals(args);
  const service = args.get('service') ?? 'StreamService';
  if (!Object.hasOwn(SERVICE_CHOICES, service)) throw new UsageError(`--service must be one of ${Object.keys(SERVICE_CHOICES).join(', ')}`);
  const address = (args.get('url') ?? DEFAULT_URL).replace(/^http:\/\//, '').replace(/\/+$/, '');
  if (!/^(\[[0-9a-fA-F:.]+\]|[^:/\s]+):\d{1,5}$/.test(address)) throw new UsageError('--url must be HOST:PORT');
  const name = args.get('filter-name') ?? DEFAULT_FILTER_NAME;
  if (name === '') throw new UsageError('--filter-name must not be empty');
  const request: SubscribeRequestInit = {
    transactions: { [name]: { accountInclude: args.all('include'), accountExclude: args.all('exclude'), accountRequired: args.all('required') } },
  };
  if (args.bool('slots')) request.newSeenSlots = true;
  return {
    address,
    service: service as ServiceChoice,
    token: args.get('token'),
    request,
    json: args.bool('json'),
    verbose: args.bool('verbose'),
  };
}

/** The line printed for one response, or undefined when it prints nothing. */
export function formatResponse(r: SubscribeResponse, opts: { json: boolean; verbose: boolean }): string | undefined {
  const tx = r.getTransaction();
  if (tx !== undefined) {
    const sig = tx.getSignaturesList_asU8()[0];
    const signature = sig === undefined ? '' : bs58.encode(sig);
    const filters = r.getFiltersList();
    if (opts.json) {
      const accountKeys = tx.getAccountKeysList_asU8().map((k) => bs58.encode(k));
      return JSON.stringify({ slot: tx.getSlot(), signature, filters, accountKeys });
    }
    return `tx ${tx.getSlot()} ${signature} filters=${filters.join(',')}`;
  }
  if (r.hasNewSlot()) return opts.json ? JSON.stringify({ newSlot: r.getNewSlot() }) : `slot ${r.getNewSlot()}`;
  if (r.hasPingId() && opts.verbose) return opts.json ? JSON.stringify({ pingId: r.getPingId() }) : `ping ${r.getPingId()}`;
  return undefined;
}

function codeName(code: number): string {
  return (Object.entries(grpc.status).find(([, v]) => v === code)?.[0] ?? 'UNKNOWN') + ` (${code})`;
}

/**
 * What an ended stream says to the user. grpc-js's details for a connection that never opened end in a
 * "Resolution note: " with nothing after it (there was no name to resolve); that is dropped, and a refused
 * connection is said as what it means.
 */
export function endedLine(s: { code: grpc.status; details: string }, address: string): string {
  const details = s.details.replace(/\s*Resolution note:\s*$/, '').trim();
  if (s.code === grpc.status.UNAVAILABLE && /ECONNREFUSED/.test(details)) {
    return `nothing answers at ${address} (connection refused): is the service running? (--url HOST:PORT names the stream endpoint)`;
  }
  return `stream ended ${codeName(s.code)}${details === '' ? '' : `: ${details}`}`;
}

export async function run(argv: string[]): Promise<number> {
  if (argv.includes('--v2')) return (await import('./subscribe-v2')).runV2(parseCommand(argv, SUBSCRIBE_SPEC));
  for (const o of ['--from-slot', '--from-cursor', '--from-time', '--skip', '--program', '--data-prefix', '--writable', '--signer', '--signature', '--vote', '--match-loaded']) if (argv.includes(o)) throw new UsageError(`${o} needs --v2`);
  const opts = parseSubscribeArgs(argv);
  const metadata = new grpc.Metadata();
  if (opts.token !== undefined) metadata.set('x-token', opts.token);
  const call = openSubscribeStream(opts.address, { service: opts.service, metadata });

  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (): void => {
      stopping = true;
      call.cancel();
    };
    const onStdoutError = (e: NodeJS.ErrnoException): void => {
      if (e.code === 'EPIPE') stop(); // the reader went away (e.g. `| head`): end quietly
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    process.stdout.on('error', onStdoutError);

    let confirmed = false;
    call.on('data', (r: SubscribeResponse) => {
      if (!confirmed && r.hasPingId() && r.getPingId() === SUBSCRIBED_PING_ID) {
        confirmed = true;
        process.stderr.write(`subscribed to ${opts.address}\n`);
      }
      const line = formatResponse(r, opts);
      // Backpressure: stop reading while stdout is full; grpc flow control then slows the server down.
      if (line !== undefined && !process.stdout.write(line + '\n')) {
        call.pause();
        process.stdout.once('drain', () => call.resume());
      }
    });
    call.on('error', () => {}); // reported from 'status'
    call.once('status', (s: grpc.StatusObject) => {
      process.removeListener('SIGINT', stop);
      process.removeListener('SIGTERM', stop);
      process.stdout.removeListener('error', onStdoutError);
      if (stopping && s.code === grpc.status.CANCELLED) return resolve(0);
      process.stderr.write(`meridian subscribe: ${endedLine(s, opts.address)}\n`);
      resolve(s.code === grpc.status.OK ? 0 : 1);
    });
    call.write(opts.request);
    call.write({ pingId: SUBSCRIBED_PING_ID });
  });
}

import fs from 'node:fs';
import YAML from 'yaml';
import type { Bus } from '../../bus/bus';
import { openBus } from '../../bus/open';
import { CLI_BROKERS_SETTING } from '../../bus/broker-address';
import { checkRental, DEFAULT_REGIONS } from '../../bus/rental-check';
import { deleteRental, putRental, readRentals } from '../../bus/rental-store';
import { TOPIC, defaultTopicSpecs } from '../../bus/topics';
import { parseRental, type Rental } from '../../bus/topics/rentals';
import { groupHelpText, parseCommand, positionals, subcommand, UsageError, type CommandSpec, type OptionSpec, type ParsedArgs } from '../base/args';
import { createLogger } from '../base/log';
import { adminClient, DEFAULT_ENDPOINTS_FILE, type RentalTarget } from '../ops/admin/client';

// `meridian rentals put|get|list|delete`: rentals are events on the compacted `rentals` topic. With Kafka
// (KAFKA_BROKERS or --brokers) this writes the topic directly; otherwise it goes through the running
// single-machine service's loopback admin endpoint, found in its endpoints file.

const TARGET_OPTIONS: OptionSpec[] = [
  { name: 'brokers', value: 'HOST:PORT,...', help: 'Kafka bootstrap servers: use the rentals topic directly', default: 'KAFKA_BROKERS' },
  { name: 'admin', value: 'HOST:PORT', help: "a running single-machine service's admin endpoint (used when no Kafka is given)" },
  { name: 'endpoints', value: 'FILE', help: 'find the admin endpoint in this endpoints file (key "admin")', default: DEFAULT_ENDPOINTS_FILE },
];

const RENTALS_HELP = groupHelpText({
  command: 'meridian rentals',
  summary: 'Rentals are events on the compacted rentals topic: Kafka when KAFKA_BROKERS (or --brokers) is set, else the running single-machine service through its loopback admin endpoint. Every surface serves a change within a second.',
  commands: [
    { name: 'put', summary: 'write rentals from --file (JSON or YAML, one or a list) or from flags; all are checked first' },
    { name: 'get', summary: 'print one rental as JSON' },
    { name: 'list', summary: 'print every rental as a table (or --json)' },
    { name: 'delete', summary: 'remove a rental (a tombstone on the topic)' },
  ],
});

const PUT_SPEC: CommandSpec = {
  command: 'meridian rentals put',
  summary: 'Write rentals. Invalid ones (bad UUID, bad IP, negative limits, unknown region) are refused with a message naming the field, and nothing is written.',
  options: [
    { name: 'file', value: 'FILE', help: 'JSON or YAML: one rental or a list' },
    { name: 'id', value: 'ID', help: 'rental id (instead of --file)' },
    { name: 'region', value: 'REGION', help: "one of --region-list; against a running service, default the region its gateways serve (the local run's: local)" },
    { name: 'rps', value: 'N', help: 'requests (units) per second on the chain gateway', default: '0' },
    { name: 'tps', value: 'N', help: 'transactions per second (gateway sendTransaction, submission)', default: '0' },
    { name: 'pps', value: 'N', help: 'packets per second level of the stream', default: '0' },
    { name: 'status', value: 'active|suspended', help: 'a suspended rental is admitted nowhere', default: 'active' },
    { name: 'ip', value: 'IP', multi: true, help: 'registered egress IP (stream, chain gateway, EVM)' },
    { name: 'evm-ip', value: 'IP', multi: true, help: 'extra EVM allowlist entry' },
    { name: 'api-key', value: 'UUID', multi: true, help: 'submission API key' },
    { name: 'token', value: 'TOKEN', multi: true, help: 'stream x-token' },
    { name: 'path', value: '/PATH', multi: true, help: 'dedicated endpoint path (the path is the credential)' },
    { name: 'region-list', value: 'a,b,...', help: `regions accepted (against a running service: the ones it accepts; on Kafka: ${DEFAULT_REGIONS.join(',')})` },
    ...TARGET_OPTIONS,
  ],
};
const GET_SPEC: CommandSpec = { command: 'meridian rentals get', args: '<id>', summary: 'Print one rental as JSON (exit 1 when there is none).', options: TARGET_OPTIONS };
const DELETE_SPEC: CommandSpec = { command: 'meridian rentals delete', args: '<id>', summary: 'Remove a rental: a tombstone on the rentals topic (exit 1 when there is none).', options: TARGET_OPTIONS };
const LIST_SPEC: CommandSpec = { command: 'meridian rentals list', summary: 'Print every rental as a table.', options: [{ name: 'json', help: 'print JSON instead' }, ...TARGET_OPTIONS] };

function rentalsFromFile(file: string): unknown[] {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new UsageError(`cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  let v: unknown;
  try {
    v = file.endsWith('.json') ? JSON.parse(text) : YAML.parse(text);
  } catch (e) {
    throw new UsageError(`${file} is not valid ${file.endsWith('.json') ? 'JSON' : 'YAML'}: ${(e as Error).message.split('\n')[0]}`);
  }
  return Array.isArray(v) ? v : [v];
}

function intFlag(args: ParsedArgs, name: string): number | undefined {
  const v = args.get(name);
  if (v === undefined) return undefined;
  if (!/^-?\d+$/.test(v)) throw new UsageError(`--${name}: expected a whole number, got ${JSON.stringify(v)}`);
  return Number(v);
}

function rentalFromFlags(args: ParsedArgs, defaultRegion: string): unknown {
  const id = args.get('id');
  if (id === undefined) throw new UsageError('put needs --file FILE or --id ID', args.command);
  const o: Record<string, unknown> = { id, region: args.get('region') ?? defaultRegion, status: args.get('status') ?? 'active' };
  for (const f of ['rps', 'tps', 'pps']) {
    const n = intFlag(args, f);
    if (n !== undefined) o[f] = n;
  }
  o.ips = args.all('ip');
  o.evmIps = args.all('evm-ip');
  o.apiKeys = args.all('api-key');
  o.tokens = args.all('token');
  o.dedicatedPaths = args.all('path');
  return o;
}

/**
 * The region of a rental put from flags without --region against a running service, until the service names the
 * one its gateways serve. Not a valid region name (regions are lowercase words), so it cannot collide.
 */
const UNKNOWN_REGION = '(service region)';

/** Parses every rental (its shape and types); nothing connects before this. */
function parsed(raws: unknown[]): Rental[] {
  return raws.map((raw, i) => {
    try {
      return parseRental(raw);
    } catch (e) {
      throw new UsageError(`${raws.length > 1 ? `rental ${i}: ` : ''}${(e as Error).message}`);
    }
  });
}

/** Checks every rental against the regions accepted: nothing is written unless all of them are valid. */
function validated(rentals: Rental[], regions: readonly string[]): Rental[] {
  rentals.forEach((r, i) => {
    const problems = checkRental(r, regions);
    if (problems.length > 0) throw new UsageError(`${rentals.length > 1 ? `rental ${i}: ` : ''}invalid rental ${JSON.stringify(r.id)}:\n  ${problems.join('\n  ')}`);
  });
  return rentals;
}

export function formatTable(rentals: Rental[]): string {
  const rows = rentals.map((r) => [r.id, r.region, r.status, String(r.rps), String(r.tps), String(r.pps), String(r.ips.length + r.evmIps.length), String(r.apiKeys.length), String(r.tokens.length), String(r.dedicatedPaths.length)]);
  const head = ['ID', 'REGION', 'STATUS', 'RPS', 'TPS', 'PPS', 'IPS', 'KEYS', 'TOKENS', 'PATHS'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]): string => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
  return [line(head), ...rows.map(line)].join('\n') + '\n';
}

async function kafkaTarget(brokers: string[]): Promise<RentalTarget & { close(): Promise<void> }> {
  // The CLI's output is its answer; the Kafka client's chatter goes to stderr, errors only.
  const log = createLogger({ level: process.env.LOG_LEVEL ?? 'error', destination: process.stderr });
  const bus: Bus = await openBus({ kind: 'kafka', brokers, clientId: 'meridian-rentals-cli', createTopics: false, streamPartitions: 1 }, { log, setting: CLI_BROKERS_SETTING });
  await bus.createTopics(defaultTopicSpecs().filter((s) => s.name === TOPIC.rentals));
  return {
    list: () => readRentals(bus, log),
    put: async (r) => {
      await putRental(bus, r);
      return r;
    },
    remove: async (id) => {
      if (!(await readRentals(bus, log)).some((r) => r.id === id)) return false;
      await deleteRental(bus, id);
      return true;
    },
    close: () => bus.close(),
  };
}

export async function run(argv: string[]): Promise<number> {
  const specs = { put: PUT_SPEC, get: GET_SPEC, list: LIST_SPEC, delete: DELETE_SPEC } as const;
  const [sub, rest] = subcommand(argv, { command: 'meridian rentals', names: ['put', 'get', 'list', 'delete'] as const, help: RENTALS_HELP });
  const args = parseCommand(rest, specs[sub]);
  let id: string | undefined;
  if (sub === 'get' || sub === 'delete') id = positionals(args, 'rental id')[0];
  else positionals(args, 'argument', 0);
  // Read before anything connects: a file that cannot be read is a usage error whatever the target.
  const fromFile = sub === 'put' && args.has('file') ? rentalsFromFile(args.get('file')!) : undefined;

  const brokers = (args.get('brokers') ?? process.env.KAFKA_BROKERS ?? '').split(',').map((b) => b.trim()).filter((b) => b.length > 0);
  const listed = args.get('region-list')?.split(',').map((x) => x.trim()).filter((x) => x.length > 0);
  // Every rental is checked before anything connects: on Kafka entirely (its regions are the operator's list or
  // the defaults); against a running service its shape here and its region once the service has said which it
  // accepts. A bad rental costs one line, not a wait on a broker.
  let toPut: Rental[] | undefined;
  if (sub === 'put') {
    toPut = parsed(fromFile ?? [rentalFromFlags(args, brokers.length > 0 ? '' : UNKNOWN_REGION)]);
    if (brokers.length > 0) validated(toPut, listed ?? DEFAULT_REGIONS);
  }
  const target: RentalTarget & { close(): Promise<void> } = brokers.length > 0 ? await kafkaTarget(brokers) : { ...adminClient(args.get('admin'), args.get('endpoints')), close: async () => undefined };
  try {
    if (sub === 'put') {
      // A running service says which regions it accepts and which one its gateways serve, so the simplest put
      // (no --region) is admitted where it is made; Kafka has no service to ask: the operator names the region.
      const service = await target.regions?.();
      const regions = listed ?? service?.regions ?? DEFAULT_REGIONS;
      const toWrite = validated(toPut!.map((r) => (r.region === UNKNOWN_REGION ? { ...r, region: service?.region ?? '' } : r)), regions);
      for (const r of toWrite) {
        await target.put(r);
        process.stdout.write(`put ${r.id}\n`);
      }
      return 0;
    }
    if (sub === 'delete') {
      if (!(await target.remove(id!))) {
        process.stderr.write(`meridian rentals: no rental ${id}\n`);
        return 1;
      }
      process.stdout.write(`deleted ${id}\n`);
      return 0;
    }
    const all = await target.list();
    if (sub === 'get') {
      const r = all.find((x) => x.id === id);
      if (r === undefined) {
        process.stderr.write(`meridian rentals: no rental ${id}\n`);
        return 1;
      }
      process.stdout.write(JSON.stringify(r, null, 2) + '\n');
      return 0;
    }
    process.stdout.write(args.bool('json') ? JSON.stringify(all, null, 2) + '\n' : formatTable(all));
    return 0;
  } finally {
    await target.close();
  }
}

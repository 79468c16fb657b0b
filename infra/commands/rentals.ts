import fs from 'node:fs';
import YAML from 'yaml';
import type { Bus } from '../../bus/bus';
import { KafkaBus } from '../../bus/kafka';
import { checkRental, DEFAULT_REGIONS } from '../../bus/rental-check';
import { deleteRental, putRental, readRentals } from '../../bus/rental-store';
import { TOPIC, defaultTopicSpecs } from '../../bus/topics';
import { parseRental, type Rental } from '../../bus/topics/rentals';
import { expectOnly, parseArgs, UsageError, type ParsedArgs } from '../args';
import { createLogger } from '../log';
import { adminClient, type RentalTarget } from '../admin/client';

// `meridian rentals put|get|list|delete`: rentals are events on the compacted `rentals` topic. With Kafka
// (KAFKA_BROKERS or --brokers) this writes the topic directly; otherwise it goes through the running
// single-machine service's loopback admin endpoint, found in its endpoints file.

export const RENTALS_USAGE = `usage: meridian rentals <put|get|list|delete> [options]

  put    --file FILE (JSON or YAML: one rental or a list)   or flags:
         --id ID --region fra|ams|lon|nyc|tyo [--rps N] [--tps N] [--pps N] [--status active|suspended]
         [--ip IP ...] [--evm-ip IP ...] [--api-key UUID ...] [--token T ...] [--path /dedicated ...]
  get    ID
  list   [--json]
  delete ID

where:  --brokers H:P,...   Kafka bootstrap servers (default: KAFKA_BROKERS); without them the running service:
        --admin HOST:PORT   its admin endpoint, or --endpoints FILE (default .meridian/endpoints.json, key "admin")
        --region-list a,b   regions accepted by put (default ${DEFAULT_REGIONS.join(',')})
`;

const COMMON = ['brokers', 'admin', 'endpoints', 'region-list', 'help'];
const PUT_FLAGS = ['file', 'id', 'region', 'rps', 'tps', 'pps', 'status', 'ip', 'evm-ip', 'api-key', 'token', 'path'];
const MULTI = ['ip', 'evm-ip', 'api-key', 'token', 'path'];

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

function rentalFromFlags(args: ParsedArgs): unknown {
  const id = args.get('id');
  if (id === undefined) throw new UsageError('put needs --file FILE or --id ID (see --help)');
  const o: Record<string, unknown> = { id, region: args.get('region') ?? '', status: args.get('status') ?? 'active' };
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

/** Parses and checks every rental first: nothing is written unless all of them are valid. */
function validated(raws: unknown[], regions: readonly string[]): Rental[] {
  return raws.map((raw, i) => {
    const where = raws.length > 1 ? `rental ${i}: ` : '';
    let r: Rental;
    try {
      r = parseRental(raw);
    } catch (e) {
      throw new UsageError(`${where}${(e as Error).message}`);
    }
    const problems = checkRental(r, regions);
    if (problems.length > 0) throw new UsageError(`${where}invalid rental ${JSON.stringify(r.id)}:\n  ${problems.join('\n  ')}`);
    return r;
  });
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
  const bus: Bus = new KafkaBus({ brokers, clientId: 'meridian-rentals-cli', log });
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
  const [sub, ...rest] = argv;
  if (sub === undefined || sub === '--help' || sub === '-h' || sub === 'help') {
    process.stdout.write(RENTALS_USAGE);
    return sub === undefined ? 2 : 0;
  }
  const args = parseArgs(rest, { multi: MULTI, booleans: ['json', 'help'] });
  if (args.has('help') || rest.includes('-h')) {
    process.stdout.write(RENTALS_USAGE);
    return 0;
  }
  const regions = (args.get('region-list') ?? DEFAULT_REGIONS.join(',')).split(',').map((s) => s.trim()).filter((s) => s.length > 0);
  let toWrite: Rental[] = [];
  let id: string | undefined;
  switch (sub) {
    case 'put':
      expectOnly(args, [...COMMON, ...PUT_FLAGS]);
      toWrite = validated(args.has('file') ? rentalsFromFile(args.get('file')!) : [rentalFromFlags(args)], regions);
      break;
    case 'get':
    case 'delete':
      expectOnly(args, COMMON);
      id = args.positional[0];
      if (id === undefined) throw new UsageError(`${sub} needs a rental ID`);
      break;
    case 'list':
      expectOnly(args, [...COMMON, 'json']);
      break;
    default:
      throw new UsageError(`unknown rentals command "${sub}" (put, get, list, delete)`);
  }

  const brokers = (args.get('brokers') ?? process.env.KAFKA_BROKERS ?? '').split(',').map((b) => b.trim()).filter((b) => b.length > 0);
  const target = brokers.length > 0 ? await kafkaTarget(brokers) : { ...adminClient(args.get('admin'), args.get('endpoints')), close: async () => undefined };
  try {
    if (sub === 'put') {
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
    process.stdout.write(args.has('json') ? JSON.stringify(all, null, 2) + '\n' : formatTable(all));
    return 0;
  } finally {
    await target.close();
  }
}

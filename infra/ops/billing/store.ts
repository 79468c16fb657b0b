import fs from 'node:fs';
import path from 'node:path';
import { LEDGER_VERSION, emptyLedger, type PartitionLedger } from './ledger';

// Durable files of a billing directory: one ledger per partition (`<topic>-p<N>.ledger.json`) and the combined
// reports. Every write is atomic and durable before it returns: temp file, fsync, rename, fsync of the
// directory. The job commits Kafka offsets only after that, so a crash at any point neither loses a unit
// nor counts one twice.
// Ledgers of a log the topic no longer carries (log-check.ts) move, unchanged, to
// `archive/<their log>.<when>/` beside the report: one rename each, so a crash never leaves a ledger in both places.
// Their totals stay in the report; nothing reads their offsets again.

export function ledgerFile(dir: string, topic: string, partition: number): string {
  return path.join(dir, `${topic}-p${partition}.ledger.json`);
}

export function writeDurable(file: string, data: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  const fd = fs.openSync(tmp, 'w');
  try {
    fs.writeSync(fd, data);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, file);
  const dfd = fs.openSync(path.dirname(file), 'r');
  try {
    fs.fsyncSync(dfd);
  } finally {
    fs.closeSync(dfd);
  }
}

export function saveLedger(dir: string, l: PartitionLedger): void {
  writeDurable(ledgerFile(dir, l.topic, l.partition), JSON.stringify(l));
}

function checkLedger(v: unknown, file: string): PartitionLedger {
  const l = v as PartitionLedger;
  const known = typeof l === 'object' && l !== null && (l.version === LEDGER_VERSION || l.version === 1);
  if (!known || typeof l.nextOffset !== 'string' || typeof l.rows !== 'object' || !Array.isArray(l.recentIds)) {
    throw new Error(`${file}: not a billing ledger of version 1 or ${LEDGER_VERSION}`);
  }
  // Version 1 did not record its log: read as of an unrecorded one (log-check.ts decides what that means).
  if (l.version === 1) return { ...l, version: LEDGER_VERSION, log: '' };
  if (typeof l.log !== 'string') throw new Error(`${file}: a billing ledger without its log`);
  return l;
}

export function loadLedger(dir: string, topic: string, partition: number): PartitionLedger {
  const file = ledgerFile(dir, topic, partition);
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return emptyLedger(topic, partition);
    throw e;
  }
  return checkLedger(JSON.parse(text), file);
}

/** Every ledger in the directory (any topic, any partition). */
export function loadAllLedgers(dir: string): PartitionLedger[] {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
  return names.filter((n) => n.endsWith('.ledger.json')).sort().map((n) => {
    const file = path.join(dir, n);
    return checkLedger(JSON.parse(fs.readFileSync(file, 'utf8')), file);
  });
}

/** The archive folder of a billing directory. */
export const ARCHIVE_DIR = 'archive';

/** A log id as a file name: letters, digits, '.', '_' and '-' kept, anything else '_'. */
export function logFileName(log: string): string {
  return log === '' ? 'unrecorded-log' : log.replace(/[^A-Za-z0-9._-]/g, '_');
}

/** A UTC time as a file name part: 20261125T143005Z. */
export function stampOf(d: Date): string {
  return d.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
}

/**
 * Moves a ledger out of the way of counting (one rename, then both folders fsynced) into `archive/<log>.<stamp>/`,
 * with a note saying why beside it. Returns the folder's name.
 */
export function archiveLedger(dir: string, l: PartitionLedger, stamp: string, why: string): string {
  // The same partition of the same log archived twice within a second (a topic recreated twice): a folder of its own.
  let name = `${logFileName(l.log)}.${stamp}`;
  for (let n = 2; fs.existsSync(ledgerFile(path.join(dir, ARCHIVE_DIR, name), l.topic, l.partition)); n++) name = `${logFileName(l.log)}.${stamp}-${n}`;
  const folder = path.join(dir, ARCHIVE_DIR, name);
  fs.mkdirSync(folder, { recursive: true });
  const from = ledgerFile(dir, l.topic, l.partition);
  fs.renameSync(from, ledgerFile(folder, l.topic, l.partition));
  for (const d of [folder, dir]) {
    const fd = fs.openSync(d, 'r');
    try {
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  }
  writeDurable(path.join(folder, `${l.topic}-p${l.partition}.why.txt`), `${why}\n`);
  return name;
}

export interface ArchivedLog {
  /** The folder under archive/: the log's id as a file name and when its ledgers were archived. */
  name: string;
  log: string;
  ledgers: PartitionLedger[];
}

/** Every archive folder of the directory, oldest first. */
export function loadArchives(dir: string): ArchivedLog[] {
  const root = path.join(dir, ARCHIVE_DIR);
  let names: string[];
  try {
    names = fs.readdirSync(root, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
  const stamp = (n: string): string => n.slice(n.lastIndexOf('.') + 1);
  return names
    .sort((a, b) => stamp(a).localeCompare(stamp(b)) || a.localeCompare(b))
    .map((name) => {
      const ledgers = loadAllLedgers(path.join(root, name));
      return { name, log: ledgers[0]?.log ?? '', ledgers };
    })
    .filter((a) => a.ledgers.length > 0);
}

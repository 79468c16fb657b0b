import fs from 'node:fs';
import path from 'node:path';
import { LEDGER_VERSION, emptyLedger, type PartitionLedger } from './ledger';

// Durable files of a billing directory: one ledger per partition (`<topic>-p<N>.ledger.json`) and the combined
// reports. Every write is atomic and durable before it returns: temp file, fsync, rename, fsync of the
// directory. The job commits Kafka offsets only after that, so a crash at any point neither loses a unit
// nor counts one twice.

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
  if (typeof l !== 'object' || l === null || l.version !== LEDGER_VERSION || typeof l.nextOffset !== 'string' || typeof l.rows !== 'object' || !Array.isArray(l.recentIds)) {
    throw new Error(`${file}: not a billing ledger of version ${LEDGER_VERSION}`);
  }
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

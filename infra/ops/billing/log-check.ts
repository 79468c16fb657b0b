import { checkOffsets, LogProbe, type LogVerdict } from '../../../bus/log-check';
import type { PartitionLedger } from './ledger';

// Does a ledger's offsets belong to the log the topic carries now? A job asks before it skips anything below a
// ledger's nextOffset: the embedded bus starts its logs at offset 0 on every start, and on Kafka a topic deleted
// and recreated (or a new cluster behind the same brokers) does too. Skipping there would drop real usage.
//
// For a ledger of partition p with nextOffset N > 0 (a ledger at 0 skips nothing): its log id must be the topic's
// (on an exact bus, embedded, a different id settles it). A ledger written before logs were recorded ('') is of
// another log on an exact bus; elsewhere it goes on to the offset checks (it has no marker either, so only the end
// offset can tell; one that passes is adopted). Then bus/log-check.ts checkOffsets, shared with stream v2 cursors:
// the log must reach N, and (not exact: Kafka) the ledger's last record, offset N − 1 and its append time, is the
// marker. A same log taken for a new one (the broker's clock stepped back) reads its retained records again, of
// which the ids the new ledger keeps (ledger.ts ledgerForNewLog) still skip the latest RECENT_IDS.

export { LogProbe, type LogVerdict };

export async function checkLedgerLog(l: PartitionLedger, probe: LogProbe): Promise<LogVerdict> {
  const next = BigInt(l.nextOffset);
  if (next === 0n) return { same: true };
  const id = probe.identity;
  if (l.log !== id.id && (l.log !== '' || id.exact)) {
    return { same: false, why: `the ledger's offsets are of log ${l.log === '' ? '(not recorded)' : l.log}; ${probe.topic} is now log ${id.id}` };
  }
  const marker = l.last === undefined ? undefined : { offset: BigInt(l.last.offset), timestamp: l.last.timestamp, describe: `the ledger's last one (offset ${l.last.offset}, ${new Date(l.last.timestamp).toISOString()})` };
  return checkOffsets(probe, l.partition, next, marker, "the ledger's");
}

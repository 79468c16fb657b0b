import type { Bus, BusMessage } from '../../../bus/bus';
import type { RunningIngest } from '../../../ingest/worker';
import { waitFor } from '../../support/wait';

// The fence for "nothing more arrives": ingest has processed `packets` datagrams and every produce it offered
// has completed (or failed, or was dropped: all counted), so it has nothing left to publish; then a marker is
// produced on each topic and read back. Each topic has one partition, so once a marker is read everything
// ingest published to that topic before it has been read too. Returns a test for the marker messages.

const MARK = Buffer.from('test-fence');

export async function drained(ingest: RunningIngest, bus: Bus, topics: string[], got: BusMessage[], packets: number): Promise<(m: BusMessage) => boolean> {
  await waitFor(() => {
    const s = ingest.stats();
    const p = s.publisher;
    return s.receiver.received >= packets && s.receiver.queued === 0 && s.pipeline.packets >= packets && p.queued === 0 && p.offered === p.published + p.failed + p.queueDrops;
  }, 60_000, `ingest to process ${packets} packets and publish all it offered`);
  for (const t of topics) await bus.produce(t, [{ key: MARK, value: MARK }]);
  const isMark = (m: BusMessage): boolean => m.key !== null && m.key !== undefined && MARK.equals(m.key);
  await waitFor(() => topics.every((t) => got.some((m) => m.topic === t && isMark(m))), 30_000, 'the markers read back');
  return isMark;
}

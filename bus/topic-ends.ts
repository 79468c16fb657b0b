import type { Bus } from './bus';

/**
 * The end offsets of `topic` when the bus has it, else why it cannot be read. For topics a component can go on
 * without (one added after a cluster was set up with topic creation off): the caller chooses what to drop and
 * says so; a missing topic is not an exception there. On Kafka the answer for a missing topic comes only after
 * the client's metadata retries (~9 s).
 */
export async function endOffsetsIfPresent(bus: Bus, topic: string): Promise<{ ok: true; ends: Map<number, string> } | { ok: false; reason: string }> {
  try {
    return { ok: true, ends: await bus.endOffsets(topic) };
  } catch (e) {
    return { ok: false, reason: e instanceof Error ? e.message : String(e) };
  }
}

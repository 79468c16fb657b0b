import fs from 'node:fs';
import type { Bus, ProduceRecord } from '../../../bus/bus';
import { readCapture } from '../../../ingest/capture';
import { Pipeline, type BatchOutput } from '../../../ingest/pipeline';
import { publishSink, type IngestTopics } from '../../../ingest/publish-sink';
import { Publisher } from '../../../ingest/publisher';
import { fixedLeader } from '../../../ingest/shred/leader-keys';

// Runs a capture through a Pipeline whose sink both records the BatchOutputs and publishes through a real
// Publisher to a recording bus (every produce call kept, in order).

export const TEST_TOPICS: IngestTopics = { transactions: 'test.tx', slots: 'test.slots' };

export interface Produce {
  topic: string;
  records: ProduceRecord[];
}

/** Only produce() does anything: what the pipeline's publish side needs. */
export function recordingBus(calls: Produce[]): Bus {
  const unused = (): never => {
    throw new Error('not used by ingest');
  };
  return {
    kind: 'embedded',
    createTopics: async () => undefined,
    produce: async (topic, records) => {
      calls.push({ topic, records });
    },
    consume: unused,
    endOffsets: unused,
    startOffsets: unused,
    logIdentity: unused,
    offsetsForTime: unused,
    close: async () => undefined,
  };
}

export interface CaptureRun {
  outputs: BatchOutput[];
  slots: bigint[];
  produces: Produce[];
  pipeline: Pipeline;
}

export async function runCapture(path: string, shredVersion: number, leader: string | Buffer, topics: IngestTopics = TEST_TOPICS): Promise<CaptureRun> {
  const packets = readCapture(fs.readFileSync(path)).packets;
  const produces: Produce[] = [];
  // One produce per item: these tests check what each batch's produce carried (the bus answers at once, so a
  // coalescing publisher would merge them).
  const publisher = new Publisher(recordingBus(produces), { maxItems: 1000, coalesce: false });
  const publish = publishSink(publisher, { topics });
  const outputs: BatchOutput[] = [];
  const slots: bigint[] = [];
  const pipeline = new Pipeline({
    shredVersion,
    leaders: fixedLeader(leader),
    sink: {
      batch: (o) => {
        outputs.push(o);
        publish.batch(o);
      },
      slot: (s, ms) => {
        slots.push(s);
        publish.slot(s, ms);
      },
    },
  });
  packets.forEach((p, i) => pipeline.push(p, 1_700_000_000_000 + i));
  await publisher.idle();
  return { outputs, slots, produces, pipeline };
}

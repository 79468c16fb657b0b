import type { Bus } from '../bus/bus';
import { endOffsetsIfPresent } from '../bus/topic-ends';
import { asListenError } from '../infra/base/config-read';
import { metrics, type Gauge, type Histogram, type Registry } from '../infra/base/metrics';
import type { Log } from '../infra/base/log';
import { encodeSlotStatusRecord, SlotStatusCode, SlotStatusSource } from '../bus/topics/stream-slot-status';
import { slotKey } from '../bus/topics/stream-slots';
import { ChainStatusHold } from './chain-hold';
import { watchChainSlots, type ChainWatch } from './chain-watch';
import type { IngestConfig } from './config';
import { leaderKeysFor, type RpcCall } from './leader-schedule';
import { Pipeline, type PipelineStats } from './pipeline';
import { DEFAULT_TOPICS, publishSink, type IngestTopics } from './publish-sink';
import { Publisher, type PublisherStats } from './publisher';
import { socketDrops, udpRcvbufErrors } from './udp-drops';
import { startUdpReceiver, type UdpReceiver, type UdpReceiverStats } from './udp-receiver';

// `meridian start`'s ingest: UDP socket → Pipeline → Publisher → bus and, with ingest.chain set, the chain node's
// slot statuses (chain-watch → ChainStatusHold → the same Publisher). Wiring only; each part bounds itself.

/** How long start waits for a first leader schedule before listening anyway (shreds meanwhile: leader_unknown). */
const LEADER_WARMUP_MS = 5000;

export interface IngestStats {
  receiver: UdpReceiverStats & { kernelDrops: number | null };
  pipeline: PipelineStats;
  publisher: PublisherStats;
  sizes: ReturnType<Pipeline['sizes']>;
  slotStatuses: ReturnType<Pipeline['slotStatusCounts']>;
  chain?: ReturnType<ChainWatch['stats']> & { held: number; timedOut: number };
}

export interface RunningIngest {
  address: { host: string; port: number };
  recvBufferBytes: number;
  stats(): IngestStats;
  close(): Promise<void>;
}

export interface IngestExtras {
  /** Topic names (tests on a shared broker use their own). */
  topics?: IngestTopics;
  /** Defaults to the process registry; tests pass their own to keep runs apart. */
  registry?: Registry;
  /** JSON-RPC transport for leader mode rpc (tests). */
  rpc?: RpcCall;
}

/** The optional topics ingest publishes, with what it does without each. */
const OPTIONAL_TOPICS = [
  ['entries', 'ingest: entries topic not on the bus; entry records are not published (create it to serve v2 entries and RAW)'],
  ['slotStatus', 'ingest: slot status topic not on the bus; slot statuses are not published (create it to serve v2 slot statuses past the first shred)'],
] as const;

/**
 * `topics` without the optional topics the bus does not have (a Kafka cluster set up before they existed, with
 * createTopics off): producing to one would fail after the client's retries, every item for it, and each failure
 * would hold that topic's lane (ingest/publisher.ts) for the retries' time.
 */
export async function withReadableTopics(bus: Bus, topics: IngestTopics, log: Log): Promise<IngestTopics> {
  let kept = topics;
  for (const [key, without] of OPTIONAL_TOPICS) {
    const topic = kept[key];
    if (topic === undefined) continue;
    const r = await endOffsetsIfPresent(bus, topic);
    if (r.ok) continue;
    log.warn({ topic, err: r.reason }, without);
    const { [key]: _absent, ...rest } = kept;
    kept = rest;
  }
  return kept;
}

export async function startIngest(cfg: IngestConfig, bus: Bus, log: Log, extras: IngestExtras = {}): Promise<RunningIngest> {
  const registry = extras.registry ?? metrics;
  const leaders = leaderKeysFor(cfg.leader, log, extras.rpc);
  const topicsReady = withReadableTopics(bus, extras.topics ?? DEFAULT_TOPICS, log);
  let warmup: NodeJS.Timeout | undefined;
  await Promise.race([leaders.ready, new Promise<void>((r) => (warmup = setTimeout(r, LEADER_WARMUP_MS)))]);
  clearTimeout(warmup);
  const topics = await topicsReady;

  const latency: Histogram = registry.histogram('meridian_ingest_publish_latency_ms', 'Last set of a batch completed → its produce resolved');
  const publisher = new Publisher(bus, { maxItems: cfg.publishQueueBatches, log });
  const statusTopic = topics.slotStatus;
  const node = cfg.chain;
  // The chain node's statuses go through the same publisher as ingest's own (one queue, one partition, one order),
  // each after ingest decoded its slot or a hold time passed (chain-hold.ts).
  const hold =
    node === undefined || node.wsUrl === '' || statusTopic === undefined
      ? undefined
      : new ChainStatusHold({
          holdMs: node.holdMs,
          maxHeld: 4096,
          release: (e) => publisher.offer({ topic: statusTopic, records: [{ key: slotKey(e.slot), value: encodeSlotStatusRecord({ ...e, source: SlotStatusSource.chain, reason: '' }) }] }),
        });
  const sink = publishSink(publisher, { topics, onLatency: (ms) => latency.observe(ms) });
  const pipeline = new Pipeline({
    sink:
      hold === undefined || sink.slotStatus === undefined
        ? sink
        : {
            ...sink,
            slotStatus: (e) => {
              sink.slotStatus!(e);
              if (e.status === SlotStatusCode.decoded || e.status === SlotStatusCode.dead) hold.ingestDone(e.slot);
            },
          },
    shredVersion: cfg.shredVersion,
    leaders,
    slotWindow: cfg.slotWindow,
    windowResetMs: cfg.windowResetMs,
    registry,
    log,
  });
  let receiver: UdpReceiver;
  try {
    receiver = await startUdpReceiver(
      {
        host: cfg.host, port: cfg.port, recvBufferBytes: cfg.recvBufferBytes, recvBufferExplicit: cfg.recvBufferExplicit, queuePackets: cfg.queuePackets, log,
        preferred: (source) => pipeline.isGoodSource(source),
      },
      (packet, arrivalMs, source) => pipeline.push(packet, arrivalMs, source),
    );
  } catch (e) {
    leaders.close();
    throw asListenError(e, 'ingest.listen');
  }
  const rx = receiver;
  let chain: ChainWatch | undefined;
  let holdTimer: NodeJS.Timeout | undefined;
  if (hold !== undefined && node !== undefined) {
    const h = hold;
    chain = watchChainSlots({ wsUrl: node.wsUrl, rpcUrl: node.rpcUrl, confirmedPollMs: node.confirmedPollMs, log, emit: (e) => h.offer(e) });
    holdTimer = setInterval(() => h.tick(), Math.max(10, Math.min(100, node.holdMs / 4)));
    holdTimer.unref();
    log.info({ confirmedPoll: node.rpcUrl !== '' }, 'ingest publishes the chain node\'s slot statuses (processed, confirmed, finalized)');
  }
  const gauges: Gauge[] = [
    registry.gauge('meridian_ingest_publish_queue_batches', 'Batches waiting to be produced', undefined, () => publisher.length),
    registry.gauge('meridian_ingest_publish_queue_drops', 'Batches dropped because the publish queue was full', undefined, () => publisher.stats().queueDrops),
    registry.gauge('meridian_ingest_udp_queue_packets', 'Packets waiting between the socket and the pipeline', undefined, () => rx.stats().queued),
    registry.gauge('meridian_ingest_udp_queue_drops', 'Packets dropped because the receive queue was full', undefined, () => rx.stats().queueDrops),
    registry.gauge('meridian_ingest_udp_queue_shed', 'Packets from sources that never sent a verified shred, shed because the receive queue was past half full', undefined, () => rx.stats().shed),
    registry.gauge('meridian_ingest_udp_recv_buffer_bytes', 'SO_RCVBUF as reported by the kernel', undefined, () => rx.recvBufferBytes),
    // -1: /proc does not say (not Linux).
    registry.gauge('meridian_ingest_udp_kernel_drops', "Datagrams the kernel dropped at ingest's socket (receive buffer full: ingest read too slowly), from /proc/net/udp", undefined, () => socketDrops(rx.address.port, rx.address.host.includes(':')) ?? -1),
    registry.gauge('meridian_ingest_udp_rcvbuf_errors', 'Udp RcvbufErrors of /proc/net/snmp: receive-buffer drops of every UDP socket in the network namespace', undefined, () => udpRcvbufErrors() ?? -1),
    registry.gauge('meridian_ingest_sources', 'Sending addresses tracked for verify budgets, by class', { class: 'good' }, () => pipeline.sizes().goodSources),
    registry.gauge('meridian_ingest_sources', 'Sending addresses tracked for verify budgets, by class', { class: 'unproven' }, () => pipeline.sizes().unprovenSources),
    registry.gauge('meridian_ingest_slot_status_slots', 'Slots whose statuses the tracker holds (capped at 2 x slotWindow + 64)', undefined, () => pipeline.sizes().statusSlots),
    registry.gauge('meridian_ingest_chain_statuses_held', 'Chain node statuses waiting for ingest to decode their slot', undefined, () => hold?.size ?? 0),
  ];
  let closing: Promise<void> | null = null;
  return {
    address: rx.address,
    recvBufferBytes: rx.recvBufferBytes,
    stats: () => ({ receiver: { ...rx.stats(), kernelDrops: socketDrops(rx.address.port, rx.address.host.includes(':')) }, pipeline: pipeline.stats(), publisher: publisher.stats(), sizes: pipeline.sizes(), slotStatuses: pipeline.slotStatusCounts(), ...(chain === undefined || hold === undefined ? {} : { chain: { ...chain.stats(), held: hold.size, timedOut: hold.timedOut } }) }),
    close() {
      closing ??= (async () => {
        chain?.close();
        clearInterval(holdTimer);
        hold?.flush();
        await rx.close(); // hands over what is queued
        await publisher.close();
        leaders.close();
        for (const g of gauges) registry.remove(g);
        registry.remove(latency);
        log.info({ stats: { packets: pipeline.stats().packets, publisher: publisher.stats() } }, 'ingest stopped');
      })();
      return closing;
    },
  };
}

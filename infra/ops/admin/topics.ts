import type http from 'node:http';
import type { Bus, ProduceRecord } from '../../../bus/bus';
import { RecordingError, type RecordingMeta } from '../../../bus/recording';
import { RecordingWriter, readRecording } from '../../../bus/recording-io';
import { formatRangePoint, parseFormattedPoint, readRange, type RangePoint } from '../../../bus/topic-range';
import { prepareTopics } from '../../../bus/topic-load';
import type { Log } from '../../base/log';

// The admin endpoint's topic routes: how `meridian topics record|replay` reach a running single-machine service,
// whose embedded bus lives inside that process and has no port of its own. Loopback only, like the rest of the
// endpoint (server.ts checks the peer first). Bodies are recordings (bus/recording.ts), so the CLI and the endpoint
// check the same checksums.
//
//   GET  /topics/records?topic=T[&topic=U…][&from=offset:N|time:MS][&to=offset:N|time:MS]
//        → 200 application/octet-stream: a recording of that range, streamed as it is read | 400/404 {error}
//   POST /topics/records   body: a recording (≤ MAX_TOPIC_BODY) → 200 {records} once the bus has every record
//        | 400 {error} and nothing written when the body is not a whole, intact recording or a topic lacks partitions

/** The CLI sends batches of ≤ 512 KiB (bus/topic-load.ts); 8 MiB bounds the endpoint's memory per request. */
export const MAX_TOPIC_BODY = 8 << 20;

export type TopicAnswer = { status: number; body: unknown } | null;

function point(v: string | null, name: string): RangePoint | undefined | string {
  if (v === null) return undefined;
  const p = parseFormattedPoint(v);
  return p ?? `${name}: expected offset:N or time:MS, got ${JSON.stringify(v)}`;
}

/**
 * GET: streams the recording onto `res` itself and returns null, or returns an error answer before anything is
 * written. A client that goes away stops the read.
 */
export async function recordTopics(bus: Bus, url: URL, res: http.ServerResponse, log: Log): Promise<TopicAnswer> {
  const topics = url.searchParams.getAll('topic');
  if (topics.length === 0) return { status: 400, body: { error: 'name at least one topic: ?topic=T' } };
  const from = point(url.searchParams.get('from'), 'from');
  const to = point(url.searchParams.get('to'), 'to');
  if (typeof from === 'string') return { status: 400, body: { error: from } };
  if (typeof to === 'string') return { status: 400, body: { error: to } };
  const partitions: RecordingMeta['topics'] = [];
  for (const t of topics) {
    try {
      partitions.push({ name: t, partitions: (await bus.endOffsets(t)).size });
    } catch {
      return { status: 404, body: { error: `no topic ${t} on this bus` } };
    }
  }
  const meta: RecordingMeta = {
    topics: partitions,
    source: { bus: bus.kind, recordedAt: new Date().toISOString() },
    range: { ...(from === undefined ? {} : { from: formatRangePoint(from) }), ...(to === undefined ? {} : { to: formatRangePoint(to) }) },
  };
  const gone = new AbortController();
  res.on('close', () => gone.abort());
  res.writeHead(200, { 'content-type': 'application/octet-stream' });
  const writer = new RecordingWriter(res, meta, gone.signal);
  try {
    const r = await readRange(bus, { topics, ...(from === undefined ? {} : { from }), ...(to === undefined ? {} : { to }), signal: gone.signal, onRecords: (ms) => writer.write(ms) });
    if (!r.aborted) writer.end();
    log.info({ topics, records: r.records, aborted: r.aborted }, 'topics recorded');
  } catch (err) {
    // Headers are gone: cutting the body short is the answer (the reader sees a recording without its end frame).
    log.error({ err }, 'topic recording failed');
    res.destroy();
    return null;
  }
  res.end();
  return null;
}

async function* chunksOf(req: http.IncomingMessage, limit: number): AsyncGenerator<Buffer> {
  let size = 0;
  for await (const c of req as AsyncIterable<Buffer>) {
    size += c.length;
    if (size > limit) throw new RecordingError(`body over ${limit} bytes; send the recording in smaller parts`);
    yield c;
  }
}

/** POST: the whole body is decoded and checked before the first record is produced. */
export async function replayTopics(bus: Bus, req: http.IncomingMessage, log: Log): Promise<TopicAnswer> {
  let meta: RecordingMeta | null = null;
  const byTopic = new Map<string, ProduceRecord[]>();
  try {
    for await (const r of readRecording(chunksOf(req, MAX_TOPIC_BODY), (m) => (meta = m))) {
      let list = byTopic.get(r.topic);
      if (list === undefined) byTopic.set(r.topic, (list = []));
      list.push({ key: r.key, value: r.value, headers: r.headers, partition: r.partition });
    }
  } catch (e) {
    if (e instanceof RecordingError) return { status: 400, body: { error: e.message } };
    throw e;
  }
  const problem = await prepareTopics(bus, meta!);
  if (problem !== null) return { status: 400, body: { error: problem } };
  let records = 0;
  for (const [topic, list] of byTopic) {
    await bus.produce(topic, list);
    records += list.length;
  }
  log.debug({ topics: [...byTopic.keys()], records }, 'recorded records replayed');
  return { status: 200, body: { records } };
}

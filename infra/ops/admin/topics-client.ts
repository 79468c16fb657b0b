import http from 'node:http';
import type { ProduceRecord } from '../../../bus/bus';
import { encodeEnd, encodeHeader, encodeRecord, frameBodySize, type RecordingMeta } from '../../../bus/recording';
import { formatRangePoint, type RangePoint } from '../../../bus/topic-range';
import type { RecordSink } from '../../../bus/topic-load';
import { UsageError } from '../../base/args';

// The CLI's side of the admin endpoint's topic routes (topics.ts): a recording read from the running service, and
// a sink that writes records into it, one small recording per produce call.

export interface AdminAddress {
  host: string;
  port: number;
}

/** Answers of the endpoint that are not a recording: `{error}` as one line. */
async function jsonError(res: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of res as AsyncIterable<Buffer>) chunks.push(c);
  const text = Buffer.concat(chunks).toString('utf8');
  try {
    const e = (JSON.parse(text) as { error?: unknown }).error;
    if (typeof e === 'string') return e;
  } catch {
    // fall through
  }
  return `admin endpoint answered ${res.statusCode ?? '?'}`;
}

function refused(addr: AdminAddress): (e: NodeJS.ErrnoException) => Error {
  return (e) => (e.code === 'ECONNREFUSED' ? new UsageError(`nothing answers at the admin endpoint ${addr.host}:${addr.port}: is \`meridian start\` running?`) : e);
}

/** GET /topics/records: the response body, a recording, as chunks (the caller decodes it). */
export function fetchRecording(addr: AdminAddress, q: { topics: string[]; from?: RangePoint; to?: RangePoint }, signal?: AbortSignal): Promise<http.IncomingMessage> {
  const params = new URLSearchParams();
  for (const t of q.topics) params.append('topic', t);
  if (q.from !== undefined) params.set('from', formatRangePoint(q.from));
  if (q.to !== undefined) params.set('to', formatRangePoint(q.to));
  return new Promise((resolve, reject) => {
    const req = http.request({ host: addr.host, port: addr.port, method: 'GET', path: `/topics/records?${params}`, ...(signal === undefined ? {} : { signal }) }, (res) => {
      if (res.statusCode === 200) return resolve(res);
      jsonError(res).then((m) => reject(new UsageError(m)), reject);
    });
    req.on('error', (e: NodeJS.ErrnoException) => reject(refused(addr)(e)));
    req.end();
  });
}

function post(addr: AdminAddress, body: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: addr.host, port: addr.port, method: 'POST', path: '/topics/records', headers: { 'content-type': 'application/octet-stream', 'content-length': body.length }, timeout: 30_000 }, (res) => {
      jsonError(res).then(
        (m) => (res.statusCode === 200 ? resolve(0) : reject(new UsageError(m))),
        reject,
      );
    });
    req.on('timeout', () => req.destroy(new Error('admin endpoint did not answer within 30 s')));
    req.on('error', (e: NodeJS.ErrnoException) => reject(refused(addr)(e)));
    req.end(body);
  });
}

/**
 * Records into the running service: each produce call is POSTed as a recording of its own (header, records, end
 * frame), so the endpoint checks it whole before writing any of it. `partitions`: target topic → partition count
 * the recording declared.
 */
export function adminSink(addr: AdminAddress, partitions: ReadonlyMap<string, number>, source: RecordingMeta['source']): RecordSink {
  return {
    produce: async (topic: string, records: ProduceRecord[]) => {
      const meta: RecordingMeta = { topics: [{ name: topic, partitions: partitions.get(topic) ?? 1 }], source };
      const frames = records.map((r) => encodeRecord(0, { partition: r.partition ?? 0, offset: '0', timestamp: 0, key: r.key, value: r.value, headers: r.headers ?? {} }));
      const body = Buffer.concat([encodeHeader(meta), ...frames, encodeEnd({ records: frames.length, bodyBytes: frames.reduce((n, f) => n + frameBodySize(f), 0) })]);
      await post(addr, body);
    },
  };
}

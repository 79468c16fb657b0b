import fs from 'node:fs';
import { once } from 'node:events';
import type { BusMessage } from './bus';
import { RecordingDecoder, RecordingError, encodeEnd, encodeHeader, encodeRecord, frameBodySize, type RecordedRecord, type RecordingMeta, type RecordingTotals } from './recording';

// Recordings on byte streams (bus/recording.ts is the codec): a reader over any chunk source (a file, an HTTP
// body) and a writer onto any node Writable (a file, an HTTP response). Both hold one frame at a time.

/** Reads a recording's chunks: the header first, then records; throws RecordingError on the first bad byte or a cut-short file. */
export async function* readRecording(chunks: AsyncIterable<Buffer>, onHeader?: (meta: RecordingMeta) => void): AsyncGenerator<RecordedRecord, RecordingTotals> {
  const dec = new RecordingDecoder();
  let totals: RecordingTotals | null = null;
  for await (const chunk of chunks) {
    dec.push(chunk);
    for (let item = dec.take(); item !== null; item = dec.take()) {
      if (item.kind === 'header') onHeader?.(item.meta);
      else if (item.kind === 'record') yield item.record;
      else totals = item.totals;
    }
  }
  dec.finish();
  return totals!;
}

/** A recording file's chunks (64 KiB reads). */
export function fileChunks(file: string): AsyncIterable<Buffer> {
  return fs.createReadStream(file, { highWaterMark: 64 * 1024 });
}

/** Reads a whole file through the decoder without keeping anything: its meta and totals, or the first problem. */
export async function verifyRecordingFile(file: string): Promise<{ meta: RecordingMeta; totals: RecordingTotals }> {
  let meta: RecordingMeta | null = null;
  const it = readRecording(fileChunks(file), (m) => (meta = m));
  for (;;) {
    const n = await it.next();
    if (n.done === true) {
      if (meta === null) throw new RecordingError('no header');
      return { meta, totals: n.value };
    }
  }
}

/**
 * Writes a recording onto a stream: the header at once, records as they come (waiting for 'drain' when the
 * stream's buffer is full, which is what holds a fast source back), the end frame on end().
 */
export class RecordingWriter {
  private readonly topicIndex: Map<string, number>;
  private totals: RecordingTotals = { records: 0, bodyBytes: 0 };
  /** Bytes written so far, header included. */
  bytes = 0;

  /** `signal`: stop waiting for 'drain' when the reader has gone (a closed HTTP response never drains). */
  constructor(private readonly out: NodeJS.WritableStream, meta: RecordingMeta, private readonly signal?: AbortSignal) {
    this.topicIndex = new Map(meta.topics.map((t, i) => [t.name, i]));
    this.put(encodeHeader(meta));
  }

  get records(): number {
    return this.totals.records;
  }

  /** Appends records; resolves when the stream can take more. */
  async write(messages: ReadonlyArray<Pick<BusMessage, 'topic' | 'partition' | 'offset' | 'timestamp' | 'key' | 'value' | 'headers'>>): Promise<void> {
    let full = false;
    for (const m of messages) {
      const ti = this.topicIndex.get(m.topic);
      if (ti === undefined) throw new Error(`record of topic ${m.topic}, which the recording's header does not list`);
      const frame = encodeRecord(ti, m);
      this.totals.records++;
      this.totals.bodyBytes += frameBodySize(frame);
      full = !this.put(frame) || full;
    }
    if (full && this.signal?.aborted !== true) {
      await once(this.out as unknown as NodeJS.EventEmitter, 'drain', this.signal === undefined ? {} : { signal: this.signal }).catch((e: unknown) => {
        if (this.signal?.aborted !== true) throw e;
      });
    }
  }

  /** Writes the end frame; the caller ends/closes the stream. */
  end(): RecordingTotals {
    this.put(encodeEnd(this.totals));
    return { ...this.totals };
  }

  private put(b: Buffer): boolean {
    this.bytes += b.length;
    return this.out.write(b);
  }
}

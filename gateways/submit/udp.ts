import dgram from 'node:dgram';
import { readDatagramKey } from './api-key';
import type { SubmitPipeline } from './pipeline';

// Native UDP (compat.md): one datagram = API key (16 raw UUID bytes, or its 36-character text) ‖ the raw
// transaction. Same pipeline; nothing is ever sent back, so every outcome is a metric
// (meridian_submit_submissions_total{transport="udp",result=...}; too-short datagrams separately).

export interface UdpOptions {
  host: string;
  port: number;
  /** Kernel receive buffer: bursts queue there while the pipeline verifies. */
  recvBufferBytes?: number;
}

export interface SubmitUdp {
  address: { host: string; port: number };
  close(): Promise<void>;
}

export async function startSubmitUdp(pipeline: SubmitPipeline, opts: UdpOptions): Promise<SubmitUdp> {
  const socket = dgram.createSocket({ type: opts.host.includes(':') ? 'udp6' : 'udp4', recvBufferSize: opts.recvBufferBytes ?? 4 * 1024 * 1024 });
  socket.on('message', (msg) => {
    const k = readDatagramKey(msg);
    if (!k.ok) {
      pipeline.metrics.udpMalformed.inc();
      return;
    }
    pipeline.submitNow({ apiKey: k.apiKey, bytes: msg.subarray(k.txOffset), transport: 'udp' });
  });
  // A socket error (e.g. ICMP noise) must not end the process; the socket keeps receiving.
  socket.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(opts.port, opts.host, () => {
      socket.off('error', reject);
      resolve();
    });
  });
  const a = socket.address();
  return {
    address: { host: opts.host, port: a.port },
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}

import type { Bus } from '../../../bus/bus';
import { EmbeddedBus } from '../../../bus/embedded';
import { defaultTopicSpecs } from '../../../bus/topics';
import type { Rental } from '../../../bus/topics/rentals';
import { UsageProducer } from '../../../bus/usage-producer';
import { parseSubmitConfig, type SubmitConfig } from '../../../gateways/submit/config';
import type { Forwarder } from '../../../gateways/submit/forwarder';
import { startSubmit, type SubmitService } from '../../../gateways/submit/service';
import { Registry } from '../../../infra/base/metrics';
import { quietLog } from '../../support/log-capture';
import { MIN_TIP, registry, rental, TIP_ACCOUNTS } from './support';

// The submission service on loopback (HTTP and UDP on port 0) over an embedded bus, with one rental.

export interface Harness {
  service: SubmitService;
  bus: Bus;
  rental: Rental;
  key: string;
  base: string;
  registry: Registry;
  logLines: string[];
  usage: UsageProducer;
  close(): Promise<void>;
}

export async function startHarness(o: { upstreams: string[]; rental?: Partial<Rental>; config?: Record<string, unknown>; forwarder?: Forwarder; bus?: Bus; usageTopic?: string }): Promise<Harness> {
  const ownBus = o.bus === undefined;
  const bus: Bus = o.bus ?? new EmbeddedBus();
  if (ownBus) await bus.createTopics(defaultTopicSpecs());
  const r = rental(o.rental);
  const { log, lines } = quietLog('debug');
  const reg = new Registry();
  const usage = new UsageProducer(bus, { registry: reg, log, closeTimeoutMs: 5_000, ...(o.usageTopic === undefined ? {} : { topic: o.usageTopic }) });
  const cfg: SubmitConfig = parseSubmitConfig({
    enabled: true,
    listen: '127.0.0.1:0',
    udp: { listen: '127.0.0.1:0' },
    tips: { accounts: TIP_ACCOUNTS.map((k) => k.toBase58()), minLamports: MIN_TIP },
    forwardUrls: o.upstreams,
    preflight: { timeoutMs: 400 },
    ...o.config,
  });
  const service = await startSubmit(cfg, { bus, rentals: registry(r), usage, log, registry: reg, ...(o.forwarder === undefined ? {} : { forwarder: o.forwarder }) });
  return {
    service,
    bus,
    rental: r,
    key: r.apiKeys[0]!,
    base: `http://127.0.0.1:${service.http.port}`,
    registry: reg,
    logLines: lines,
    usage,
    close: async () => {
      await service.close();
      await usage.close();
      if (ownBus) await bus.close();
    },
  };
}

export async function rpc(h: Harness, body: unknown, key: string | null = h.key): Promise<{ status: number; json: { result?: unknown; error?: { code: number; message: string; data?: unknown }; id: unknown } }> {
  const res = await fetch(`${h.base}/${key === null ? '' : `?api-key=${key}`}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body) });
  return { status: res.status, json: (await res.json()) as never };
}

export function sendTx(txText: string, options?: Record<string, unknown>, id: number | string = 1): unknown {
  return { jsonrpc: '2.0', id, method: 'sendTransaction', params: options === undefined ? [txText] : [txText, options] };
}

export async function post(h: Harness, path: string, body: Uint8Array | string, key: string | null = h.key, type = 'application/octet-stream'): Promise<{ status: number; text: string; type: string | null }> {
  const res = await fetch(`${h.base}${path}${key === null ? '' : `?api-key=${key}`}`, { method: 'POST', headers: { 'content-type': type }, body });
  return { status: res.status, text: await res.text(), type: res.headers.get('content-type') };
}

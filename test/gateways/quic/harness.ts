import { EmbeddedBus } from '../../../bus/embedded';
import { defaultTopicSpecs } from '../../../bus/topics';
import type { Rental } from '../../../bus/topics/rentals';
import { parseSubmitConfig } from '../../../gateways/submit/config';
import { parseQuicConfig } from '../../../gateways/submit/quic/config';
import { QuicListener } from '../../../gateways/submit/quic/listener';
import { QuicMetrics } from '../../../gateways/submit/quic/metrics';
import { startSubmit, type SubmitService } from '../../../gateways/submit/service';
import { Registry } from '../../../infra/base/metrics';
import { quietLog } from '../../support/log-capture';
import { MIN_TIP, registry, rental, TIP_ACCOUNTS } from '../submit/support';

// The real submission service (pipeline, forwarder to `upstreams`) on an embedded bus, plus the QUIC listener
// on 127.0.0.1:0 in front of its pipeline. Two rentals: `key` (generous TPS) and `slowKey` (TPS 1, for the
// rate-limited status).

export interface QuicHarness {
  service: SubmitService;
  quic: QuicListener;
  addr: string;
  key: string;
  slowKey: string;
  rental: Rental;
  registry: Registry;
  logLines: string[];
  close(): Promise<void>;
}

export async function startQuicHarness(o: { upstreams: string[]; quic?: Record<string, unknown> }): Promise<QuicHarness> {
  const bus = new EmbeddedBus();
  await bus.createTopics(defaultTopicSpecs());
  const fast = rental({ tps: 100_000 });
  const slow = rental({ tps: 1 });
  const { log, lines } = quietLog('debug');
  const reg = new Registry();
  const cfg = parseSubmitConfig({
    enabled: true,
    listen: '127.0.0.1:0',
    udp: { enabled: false },
    tips: { accounts: TIP_ACCOUNTS.map((k) => k.toBase58()), minLamports: MIN_TIP },
    forwardUrls: o.upstreams,
  });
  const service = await startSubmit(cfg, { bus, rentals: registry(fast, slow), log, registry: reg });
  let quic: QuicListener;
  try {
    quic = await QuicListener.start({ config: parseQuicConfig({ listen: '127.0.0.1:0', ...o.quic }), pipeline: service.pipeline, log, metrics: new QuicMetrics(reg) });
  } catch (e) {
    await service.close();
    await bus.close();
    throw e;
  }
  return {
    service,
    quic,
    addr: `127.0.0.1:${quic.address.port}`,
    key: fast.apiKeys[0]!,
    slowKey: slow.apiKeys[0]!,
    rental: fast,
    registry: reg,
    logLines: lines,
    close: async () => {
      await quic.close();
      await service.close();
      await bus.close();
    },
  };
}

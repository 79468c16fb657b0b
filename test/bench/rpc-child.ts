import { EmbeddedBus } from '../../bus/embedded';
import { TOPIC, defaultTopicSpecs } from '../../bus/topics';
import { rentalsFromList } from '../../bus/rental-registry';
import { parseRental } from '../../bus/topics/rentals';
import { UsageProducer } from '../../bus/usage-producer';
import { startLocalChain } from '../../infra/localchain';
import { createLogger } from '../../infra/log';
import { parseRpcGatewayConfig } from '../../gateways/rpc/config';
import { startRpcGateway } from '../../gateways/rpc/gateway';

// One process of the chain gateway bench (test/bench/rpc.ts): RPC_BENCH_ROLE=chain runs the local chain node,
// RPC_BENCH_ROLE=gateway runs the gateway (metering on, usage events produced to an embedded bus) in front of
// RPC_BENCH_UPSTREAM. Each reports its URLs once listening and its CPU time when asked, so the figures of the
// gateway are its own and not the load generator's or the node's.

type Req = { type: 'cpu' } | { type: 'close' };

async function main(): Promise<void> {
  const role = process.env.RPC_BENCH_ROLE;
  const log = createLogger({ level: 'warn' });
  let close: () => Promise<void>;
  if (role === 'chain') {
    const chain = await startLocalChain({ port: 0, slotMs: Number(process.env.RPC_BENCH_SLOT_MS ?? 50), log });
    process.send!({ type: 'ready', http: chain.httpUrl, ws: chain.wsUrl });
    close = () => chain.close();
  } else {
    const up = JSON.parse(process.env.RPC_BENCH_UPSTREAM ?? '{}') as { http: string; ws: string };
    const bus = new EmbeddedBus();
    await bus.createTopics(defaultTopicSpecs().filter((t) => t.name === TOPIC.usageEvents));
    const usage = new UsageProducer(bus, { log });
    let events = 0;
    const consumer = await bus.consume({ topics: [TOPIC.usageEvents], from: 'beginning', onBatch: (b) => void (events += b.length) });
    const cfg = parseRpcGatewayConfig({ listen: '127.0.0.1:0', wsListen: '127.0.0.1:0', upstreams: [up], region: '' });
    const rentals = rentalsFromList([parseRental({ id: 'bench', ips: ['127.0.0.1'], rps: 1e9, tps: 1e9 })]);
    const gw = await startRpcGateway(cfg, { rentals, log, usage });
    process.send!({ type: 'ready', http: gw.http.url, ws: gw.ws.url });
    close = async () => {
      await gw.close();
      await usage.close();
      await consumer.close();
      await bus.close();
    };
    process.on('message', (m: Req) => {
      if (m.type === 'cpu') process.send!({ type: 'cpu', usage: process.cpuUsage(), events });
    });
  }
  process.on('message', (m: Req) => {
    if (m.type === 'cpu' && role === 'chain') process.send!({ type: 'cpu', usage: process.cpuUsage(), events: 0 });
    if (m.type === 'close') void close().finally(() => process.exit(0));
  });
}

main().catch((e: unknown) => {
  process.send?.({ type: 'error', message: (e as Error).stack ?? String(e) });
  process.exit(1);
});

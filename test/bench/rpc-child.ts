import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';
import { EmbeddedBus } from '../../bus/embedded';
import { TOPIC, defaultTopicSpecs } from '../../bus/topics';
import { rentalsFromList } from '../../bus/rental-registry';
import { parseRental } from '../../bus/topics/rentals';
import { UsageProducer } from '../../bus/usage-producer';
import { startLocalChain } from '../../infra/local/chain';
import { createLogger } from '../../infra/base/log';
import { parseRpcGatewayConfig } from '../../gateways/rpc/config';
import { startRpcGateway } from '../../gateways/rpc/gateway';

// One process of the chain gateway bench (test/bench/rpc.ts): RPC_BENCH_ROLE=chain runs the local chain node,
// RPC_BENCH_ROLE=gateway runs the gateway (metering on, usage events produced to an embedded bus) in front of
// RPC_BENCH_UPSTREAM (RPC_BENCH_FLEET=1: with fleet-wide limits), RPC_BENCH_ROLE=bare the least a proxy can be (node:http in, an undici pool out, the reply
// bytes passed back; no auth, metering, usage, health or error contract), the reference for what the extra hop
// itself costs on this machine. Each reports its URLs once listening and its CPU time when asked, so the figures of the
// gateway are its own and not the load generator's or the node's.

type Req = { type: 'cpu' } | { type: 'close' };

/**
 * usage.events messages the bench's embedded bus keeps per partition: the usage producer's batch (500), the
 * least that never trims a batch before its reader (a microtask after the append) has read it. The bus's
 * default, 200,000, keeps every event of a run in the gateway's heap (RPC_BENCH_USAGE_RETAINED=200000 shows
 * the cost); even 1,000 left ~0.5 MB of events for every scavenge to copy.
 */
const USAGE_RETAINED = Number(process.env.RPC_BENCH_USAGE_RETAINED ?? 500);

async function main(): Promise<void> {
  const role = process.env.RPC_BENCH_ROLE;
  const log = createLogger({ level: 'warn' });
  let close: () => Promise<void>;
  if (role === 'chain') {
    const chain = await startLocalChain({ port: 0, slotMs: Number(process.env.RPC_BENCH_SLOT_MS ?? 50), log });
    process.send!({ type: 'ready', http: chain.httpUrl, ws: chain.wsUrl });
    close = () => chain.close();
  } else if (role === 'bare') {
    const up = JSON.parse(process.env.RPC_BENCH_UPSTREAM ?? '{}') as { http: string };
    const { origin, pathname } = new URL(up.http);
    const pool = new Pool(origin, { connections: 128, pipelining: 1 });
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        pool
          .request({ method: 'POST', path: pathname, headers: { 'content-type': 'application/json' }, body: Buffer.concat(chunks) })
          .then(async (r) => {
            const body = Buffer.from(await r.body.arrayBuffer());
            res.writeHead(r.statusCode, { 'content-type': 'application/json', 'content-length': body.length });
            res.end(body);
          })
          .catch(() => res.destroy());
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    process.send!({ type: 'ready', http: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, ws: '' });
    close = async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await pool.close();
    };
  } else {
    const up = JSON.parse(process.env.RPC_BENCH_UPSTREAM ?? '{}') as { http: string; ws: string };
    // The bus stands in for the broker, which in a deployment is another process: it must not hoard every
    // event in the gateway's heap (kept, a 40 s run promotes ~400k events to the old generation and the
    // gateway pays for them in scavenges that copy survivors and in mark-compact pauses). The reader below
    // consumes as events arrive; `skipped` (events retention dropped before it read them) is reported.
    const bus = new EmbeddedBus({ topicLimits: { [TOPIC.usageEvents]: { maxMessagesPerPartition: USAGE_RETAINED } } });
    await bus.createTopics(defaultTopicSpecs().filter((t) => t.name === TOPIC.usageEvents || t.name === TOPIC.fleetUsage));
    const usage = new UsageProducer(bus, { log });
    let events = 0;
    const consumer = await bus.consume({ topics: [TOPIC.usageEvents], from: 'beginning', onBatch: (b) => void (events += b.length) });
    const cfg = parseRpcGatewayConfig({ listen: '127.0.0.1:0', wsListen: '127.0.0.1:0', upstreams: [up], region: '' });
    const rentals = rentalsFromList([parseRental({ id: 'bench', ips: ['127.0.0.1'], rps: 1e9, tps: 1e9 })]);
    // RPC_BENCH_FLEET=1: fleet-wide limits on, the usage exchange on this process's bus (reports every 200 ms, read
    // back, no peer): the per-request rule and the exchange's own work, not a broker's round trip.
    const fleet = process.env.RPC_BENCH_FLEET === '1';
    const gw = await startRpcGateway(cfg, { rentals, log, usage: process.env.RPC_BENCH_NO_USAGE === '1' ? undefined : usage, ...(fleet ? { fleetBus: bus } : {}) });
    process.send!({ type: 'ready', http: gw.http.url, ws: gw.ws.url });
    close = async () => {
      await gw.close();
      await usage.close();
      await consumer.close();
      await bus.close();
    };
    process.on('message', (m: Req) => {
      if (m.type === 'cpu') process.send!({ type: 'cpu', usage: process.cpuUsage(), events, skipped: bus.stats.skipped });
    });
  }
  process.on('message', (m: Req) => {
    if (m.type === 'cpu' && role !== 'gateway') process.send!({ type: 'cpu', usage: process.cpuUsage(), events: 0, skipped: 0 });
    if (m.type === 'close') void close().finally(() => process.exit(0));
  });
}

main().catch((e: unknown) => {
  process.send?.({ type: 'error', message: (e as Error).stack ?? String(e) });
  process.exit(1);
});

import { rentalsFromList, type RentalRegistry } from '../../../bus/rental-registry';
import { parseRental, type Rental } from '../../../bus/topics/rentals';
import type { UsageProducer } from '../../../bus/usage-producer';
import { startLocalChain, type LocalChain } from '../../../infra/local/chain';
import { Registry } from '../../../infra/base/metrics';
import { parseRpcGatewayConfig } from '../../../gateways/rpc/config';
import { startRpcGateway, type RpcGateway } from '../../../gateways/rpc/gateway';
import type { RpcUpstreamConfig } from '../../../gateways/rpc/config';
import { quietLog } from '../../support/log-capture';

// Shared by the chain gateway tests: the real local chain node as upstream, a gateway on ephemeral loopback
// ports in front of it, and rentals built from a list.

export const rental = (over: Partial<Rental> & { id: string }): Rental => parseRental({ rps: 1000, tps: 100, region: 'fra', ips: [], ...over });

export async function localChain(): Promise<LocalChain> {
  const { log } = quietLog('warn');
  return startLocalChain({ port: 0, slotMs: 100, log });
}

export interface TestGateway extends RpcGateway {
  lines: string[];
}

export async function testGateway(o: { upstreams: RpcUpstreamConfig[]; rentals: Rental[] | RentalRegistry; config?: Record<string, unknown>; usage?: UsageProducer }): Promise<TestGateway> {
  const { log, lines } = quietLog('debug');
  const cfg = parseRpcGatewayConfig({ listen: '127.0.0.1:0', wsListen: '127.0.0.1:0', region: 'fra', health: { intervalMs: 100 }, ...o.config, upstreams: o.upstreams });
  const rentals = Array.isArray(o.rentals) ? rentalsFromList(o.rentals) : o.rentals;
  const gw = await startRpcGateway(cfg, { rentals, log, usage: o.usage, registry: new Registry() });
  return Object.assign(gw, { lines });
}

export const chainUpstream = (c: LocalChain): RpcUpstreamConfig => ({ http: c.httpUrl, ws: c.wsUrl });

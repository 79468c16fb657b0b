import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import http from 'node:http';
import * as grpc from '@grpc/grpc-js';
import type { Bus } from '../../../bus/bus';
import { KafkaBus } from '../../../bus/kafka';
import { deleteRental, putRental } from '../../../bus/rental-store';
import { TOPIC, defaultTopicSpecs } from '../../../bus/topics';
import { parseRental, type Rental } from '../../../bus/topics/rentals';
import { parseConfig } from '../../../infra/config';
import { launch, type Running } from '../../../infra/launcher';
import { kafkaBrokers } from '../../support/kafka';
import { quietLog } from '../../support/log-capture';
import { StreamClient } from '../../support/stream-client';

// A rental put while every surface runs is served within a second on each of them, and a deleted one is refused
// within a second with that surface's own row: chain gateway (403 -32003 by IP), submission (401 by API key),
// EVM (403 by IP), stream (UNAUTHENTICATED by x-token). Nothing restarts. On the embedded bus the rental goes
// through the admin endpoint (as `meridian rentals` does on one machine), on Kafka straight onto the topic.

const LIVE_MS = 1_000;

interface Probe {
  name: string;
  /** true = admitted, false = refused with the surface's row; anything else throws. */
  admitted(): Promise<boolean>;
}

function request(url: string, body: string, headers: Record<string, string> = {}): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers } }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const rpcCall = (method: string): string => JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: [] });

function probes(r: Running, rental: Rental): Probe[] {
  const e = r.endpoints;
  const key = rental.apiKeys[0]!;
  const token = rental.tokens[0]!;
  return [
    {
      name: 'chain gateway',
      admitted: async () => {
        const res = await request(e.rpc!.http, rpcCall('getSlot'));
        if (res.status === 200) return true;
        assert.equal(res.status, 403, res.text);
        assert.equal((JSON.parse(res.text) as { error: { code: number } }).error.code, -32003);
        return false;
      },
    },
    {
      name: 'submission',
      admitted: async () => {
        // An empty transaction: admitted keys get past authentication to a 400 about the transaction itself.
        const res = await request(`${e.submit!.http!}/binary?api-key=${key}`, '', { 'content-type': 'application/octet-stream' });
        if (res.status === 401) return false;
        assert.equal(res.status, 400, res.text);
        return true;
      },
    },
    {
      name: 'EVM',
      admitted: async () => {
        const res = await request(e.evm!['56']!.http, rpcCall('eth_chainId'));
        if (res.status === 200) return true;
        assert.equal(res.status, 403, res.text);
        return false;
      },
    },
    {
      name: 'stream',
      admitted: async () => {
        const m = new grpc.Metadata();
        m.set('x-token', token);
        const c = StreamClient.open(e.stream!, { metadata: m });
        try {
          c.send({ pingId: 5 });
          // A refused stream ends before any response: waitFor rejects then, and the status says why.
          const first = await c.waitFor((x) => x.pingId === 5, 10_000).then(() => 'ok' as const, async () => c.ended);
          if (first === 'ok') return true;
          assert.equal(first.code, grpc.status.UNAUTHENTICATED, first.details);
          return false;
        } finally {
          await c.close();
        }
      },
    },
  ];
}

/**
 * Polls every surface until each answers `want`. Returns, per surface, when (ms after `t0`) the first request that
 * got that answer was sent: the moment the surface was seen to have changed, without the probe's own round trip
 * (a stream open on a loaded machine can take longer than the change itself).
 */
async function allBecome(ps: Probe[], want: boolean, t0: number): Promise<Map<string, number>> {
  const seen = new Map<string, number>();
  while (seen.size < ps.length) {
    for (const p of ps) {
      if (seen.has(p.name)) continue;
      const sentAt = performance.now();
      if ((await p.admitted()) === want) seen.set(p.name, sentAt - t0);
    }
    if (seen.size < ps.length && performance.now() - t0 > 30_000) {
      throw new Error(`${ps.filter((p) => !seen.has(p.name)).map((p) => p.name).join(', ')} still ${want ? 'refused' : 'admitted'} after 30 s`);
    }
  }
  return seen;
}

const slowest = (m: Map<string, number>): number => Math.max(...m.values());
const show = (m: Map<string, number>): string => [...m].map(([n, ms]) => `${n} ${Math.round(ms)} ms`).join(', ');

function suite(kind: 'embedded' | 'kafka'): void {
  describe(`rentals are live on every surface (${kind} bus)`, function () {
    this.timeout(240_000);
    let running: Running | undefined;
    let kafka: Bus | undefined;

    after(async () => {
      await running?.stop();
      await kafka?.close();
    });

    it('a put is served within a second everywhere, a delete refused within a second', async () => {
      const brokers = kind === 'kafka' ? await kafkaBrokers() : [];
      const cfg = parseConfig({
        bus: kind === 'kafka' ? { kind: 'kafka', brokers } : { kind: 'embedded' },
        metrics: { enabled: false },
        localchain: { enabled: true, listen: '127.0.0.1:0', slotMs: 200 },
        ingest: { enabled: false },
        fanout: { listen: '127.0.0.1:0', auth: { mode: 'token' } },
        rentals: { fromBus: true },
        admin: { enabled: kind === 'embedded', listen: '127.0.0.1:0' },
        gateways: {
          rpc: { enabled: true, listen: '127.0.0.1:0', wsListen: '127.0.0.1:0', region: 'fra' },
          submit: { enabled: true, listen: '127.0.0.1:0', udp: { enabled: false }, tips: { accounts: ['843LmQAXSQZYXEzVFj1RmwySFNfsphBndCWq1F7Jm4gp'], minLamports: 1_000_000 } },
          evm: { enabled: true, serve: [56], auth: { mode: 'ip' }, chains: { '56': { http: '127.0.0.1:0', ws: '127.0.0.1:0', anvil: true } } },
        },
      });
      const { log } = quietLog('warn');
      running = await launch(cfg, log);
      const rental = parseRental({ id: `live-${kind}-${process.pid}`, region: 'fra', rps: 1_000, tps: 100, ips: ['127.0.0.1'], apiKeys: [crypto.randomUUID()], tokens: [`tok-${crypto.randomUUID()}`] });
      const ps = probes(running, rental);
      for (const p of ps) assert.equal(await p.admitted(), false, `${p.name} refuses before the rental exists`);

      const put = async (): Promise<void> => {
        if (kind === 'embedded') {
          const res = await new Promise<number>((resolve, reject) => {
            const req = http.request(`http://${running!.endpoints.admin!}/rentals/${rental.id}`, { method: 'PUT', headers: { 'content-type': 'application/json' } }, (r) => {
              r.resume();
              r.on('end', () => resolve(r.statusCode ?? 0));
            });
            req.on('error', reject);
            req.end(JSON.stringify(rental));
          });
          assert.equal(res, 200);
        } else {
          kafka ??= new KafkaBus({ brokers, clientId: 'live-surfaces', log });
          await kafka.createTopics(defaultTopicSpecs().filter((s) => s.name === TOPIC.rentals));
          await putRental(kafka, rental);
        }
      };
      const remove = async (): Promise<void> => {
        if (kind === 'embedded') {
          const status = await new Promise<number>((resolve, reject) => {
            const req = http.request(`http://${running!.endpoints.admin!}/rentals/${rental.id}`, { method: 'DELETE' }, (r) => {
              r.resume();
              r.on('end', () => resolve(r.statusCode ?? 0));
            });
            req.on('error', reject);
            req.end();
          });
          assert.equal(status, 200);
        } else {
          await deleteRental(kafka!, rental.id);
        }
      };

      const t0 = performance.now();
      await put();
      const served = await allBecome(ps, true, t0);
      const t1 = performance.now();
      await remove();
      const refused = await allBecome(ps, false, t1);
      process.stdout.write(`      served after the put: ${show(served)}\n      refused after the delete: ${show(refused)}\n`);
      assert.equal(served.size, 4);
      assert.equal(refused.size, 4);
      assert.ok(slowest(served) < LIVE_MS, `served within a second: ${show(served)}`);
      assert.ok(slowest(refused) < LIVE_MS, `refused within a second: ${show(refused)}`);
    });
  });
}

suite('embedded');
suite('kafka');

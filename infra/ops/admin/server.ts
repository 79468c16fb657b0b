import http from 'node:http';
import Koa from 'koa';
import type { Bus } from '../../../bus/bus';
import { checkRental } from '../../../bus/rental-check';
import type { RentalRegistry } from '../../../bus/rental-registry';
import { deleteRental, putRental } from '../../../bus/rental-store';
import { parseRental, type Rental } from '../../../bus/topics/rentals';
import type { Log } from '../../base/log';
import { recordTopics, replayTopics } from './topics';

// The loopback-only admin endpoint of a single-machine run: `meridian rentals …` talks to it when there is no
// Kafka cluster to write to. It writes the very event an operator would write to Kafka (onto the embedded bus)
// and reads back through the same projection every surface uses, so what it answers is what is served.
// A koa app (not a hot path) on node:http's server: a switch on method and path, one middleware turning a failure
// into 500. The loopback check reads the socket's own address (never a forwarded header), and the body is read from
// the raw request stream so the size limit holds without buffering past it.
//
//   GET    /rentals        → 200 [Rental...]
//   GET    /rentals/ID     → 200 Rental | 404
//   PUT    /rentals/ID     → 200 Rental (once every surface's projection holds it) | 400 {error, problems}
//   DELETE /rentals/ID     → 200 {deleted: ID} (once no surface admits it) | 404
//   GET|POST /topics/records → record or replay topics of the embedded bus (topics.ts)

const MAX_BODY = 1 << 20;
const LIVE_WAIT_MS = 2_000;

export interface AdminOptions {
  host: string;
  port: number;
  regions: readonly string[];
  /** The region this service's gateways serve ('' = any): what a rental put without a region is for. */
  region?: string;
  log: Log;
}

export interface AdminServer {
  address: string;
  close(): Promise<void>;
}

export function isLoopback(addr: string | undefined): boolean {
  if (addr === undefined) return false;
  const a = addr.startsWith('::ffff:') ? addr.slice(7) : addr;
  return a === '::1' || /^127\./.test(a);
}

/** JSON answer with exactly this content-type (koa's own would add a charset); koa sets the content-length. */
function send(ctx: Koa.Context, status: number, body: unknown): void {
  ctx.status = status;
  ctx.set('content-type', 'application/json');
  ctx.body = JSON.stringify(body);
}

async function readBody(req: http.IncomingMessage): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req as AsyncIterable<Buffer>) {
    size += c.length;
    if (size > MAX_BODY) return null;
    chunks.push(c);
  }
  return Buffer.concat(chunks).toString('utf8');
}

async function until(pred: () => boolean): Promise<boolean> {
  const end = Date.now() + LIVE_WAIT_MS;
  while (!pred()) {
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 10));
  }
  return true;
}

export async function startAdmin(bus: Bus, registry: RentalRegistry, o: AdminOptions): Promise<AdminServer> {
  if (!isLoopback(o.host) && o.host !== 'localhost') throw new Error(`admin.listen: the admin endpoint binds loopback only, not ${o.host}`);
  const find = (id: string): Rental | undefined => registry.all().find((r) => r.id === id);

  const app = new Koa();
  app.on('error', (err: unknown) => o.log.error({ err }, 'admin request failed'));
  app.use(async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      o.log.error({ err }, 'admin request failed');
      send(ctx, 500, { error: 'internal error' });
    }
  });
  app.use(async (ctx) => {
    if (!isLoopback(ctx.socket.remoteAddress)) return send(ctx, 403, { error: 'the admin endpoint answers loopback clients only' });
    // WHATWG URL rather than ctx.path: the same normalisation of dot segments and escapes as before.
    const url = new URL(ctx.url, 'http://admin.invalid');
    if (url.pathname === '/topics/records') {
      if (ctx.method === 'GET') {
        ctx.respond = false; // the recording streams onto the raw response
        const answer = await recordTopics(bus, url, ctx.res, o.log);
        if (answer !== null) {
          ctx.respond = true;
          send(ctx, answer.status, answer.body);
        }
        return;
      }
      if (ctx.method === 'POST') {
        const answer = await replayTopics(bus, ctx.req, o.log);
        return send(ctx, answer!.status, answer!.body);
      }
      ctx.set('allow', 'GET, POST');
      return send(ctx, 405, { error: `${ctx.method} is not allowed here` });
    }
    if (url.pathname === '/regions') {
      if (ctx.method !== 'GET') {
        ctx.set('allow', 'GET');
        return send(ctx, 405, { error: `${ctx.method} is not allowed here` });
      }
      return send(ctx, 200, { regions: o.regions, region: o.region ?? '' });
    }
    const m = /^\/rentals(?:\/([^/]+))?\/?$/.exec(url.pathname);
    if (m === null) return send(ctx, 404, { error: 'no such route; try /rentals, /regions or /topics/records' });
    const id = m[1] === undefined ? undefined : decodeURIComponent(m[1]);
    if (ctx.method === 'GET' && id === undefined) return send(ctx, 200, registry.all().sort((a, b) => a.id.localeCompare(b.id)));
    if (ctx.method === 'GET' && id !== undefined) {
      const r = find(id);
      return r === undefined ? send(ctx, 404, { error: `no rental ${id}` }) : send(ctx, 200, r);
    }
    if (ctx.method === 'PUT' && id !== undefined) {
      const text = await readBody(ctx.req);
      if (text === null) return send(ctx, 413, { error: `body over ${MAX_BODY} bytes` });
      let rental: Rental;
      try {
        const raw = JSON.parse(text) as unknown;
        if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error('rental must be a JSON object');
        rental = parseRental({ ...(raw as object), id });
      } catch (e) {
        return send(ctx, 400, { error: `invalid rental: ${(e as Error).message}`, problems: [(e as Error).message] });
      }
      const problems = checkRental(rental, o.regions);
      if (problems.length > 0) return send(ctx, 400, { error: `invalid rental: ${problems[0]}`, problems });
      await putRental(bus, rental);
      const live = await until(() => JSON.stringify(find(id)) === JSON.stringify(rental));
      o.log.info({ rentalId: id, live }, 'rental put');
      return send(ctx, 200, rental);
    }
    if (ctx.method === 'DELETE' && id !== undefined) {
      if (find(id) === undefined) return send(ctx, 404, { error: `no rental ${id}` });
      await deleteRental(bus, id);
      const live = await until(() => find(id) === undefined);
      o.log.info({ rentalId: id, live }, 'rental deleted');
      return send(ctx, 200, { deleted: id });
    }
    ctx.set('allow', id === undefined ? 'GET' : 'GET, PUT, DELETE');
    return send(ctx, 405, { error: `${ctx.method} is not allowed here` });
  });

  const server = http.createServer(app.callback());
  server.maxConnections = 64;
  server.requestTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => resolve());
  });
  const a = server.address();
  const port = a !== null && typeof a === 'object' ? a.port : o.port;
  return {
    address: `${o.host.includes(':') ? `[${o.host}]` : o.host}:${port}`,
    close: () => new Promise<void>((r) => {
      server.close(() => r());
      server.closeAllConnections();
    }),
  };
}

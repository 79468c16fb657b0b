import http from 'node:http';
import type { Bus } from '../../../bus/bus';
import { checkRental } from '../../../bus/rental-check';
import type { RentalRegistry } from '../../../bus/rental-registry';
import { deleteRental, putRental } from '../../../bus/rental-store';
import { parseRental, type Rental } from '../../../bus/topics/rentals';
import type { Log } from '../../base/log';

// The loopback-only admin endpoint of a single-machine run: `meridian rentals …` talks to it when there is no
// Kafka cluster to write to. It writes the very event an operator would write to Kafka (onto the embedded bus)
// and reads back through the same projection every surface uses, so what it answers is what is served.
// node:http rather than koa: four routes, no middleware, and the loopback check must see the raw socket.
//
//   GET    /rentals        → 200 [Rental...]
//   GET    /rentals/ID     → 200 Rental | 404
//   PUT    /rentals/ID     → 200 Rental (once every surface's projection holds it) | 400 {error, problems}
//   DELETE /rentals/ID     → 200 {deleted: ID} (once no surface admits it) | 404

const MAX_BODY = 1 << 20;
const LIVE_WAIT_MS = 2_000;

export interface AdminOptions {
  host: string;
  port: number;
  regions: readonly string[];
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

function send(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
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

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    if (!isLoopback(req.socket.remoteAddress)) return send(res, 403, { error: 'the admin endpoint answers loopback clients only' });
    const url = new URL(req.url ?? '/', 'http://admin.invalid');
    const m = /^\/rentals(?:\/([^/]+))?\/?$/.exec(url.pathname);
    if (m === null) return send(res, 404, { error: 'no such route; try /rentals' });
    const id = m[1] === undefined ? undefined : decodeURIComponent(m[1]);
    if (req.method === 'GET' && id === undefined) return send(res, 200, registry.all().sort((a, b) => a.id.localeCompare(b.id)));
    if (req.method === 'GET' && id !== undefined) {
      const r = find(id);
      return r === undefined ? send(res, 404, { error: `no rental ${id}` }) : send(res, 200, r);
    }
    if (req.method === 'PUT' && id !== undefined) {
      const text = await readBody(req);
      if (text === null) return send(res, 413, { error: `body over ${MAX_BODY} bytes` });
      let rental: Rental;
      try {
        const raw = JSON.parse(text) as unknown;
        if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error('rental must be a JSON object');
        rental = parseRental({ ...(raw as object), id });
      } catch (e) {
        return send(res, 400, { error: `invalid rental: ${(e as Error).message}`, problems: [(e as Error).message] });
      }
      const problems = checkRental(rental, o.regions);
      if (problems.length > 0) return send(res, 400, { error: `invalid rental: ${problems[0]}`, problems });
      await putRental(bus, rental);
      const live = await until(() => JSON.stringify(find(id)) === JSON.stringify(rental));
      o.log.info({ rentalId: id, live }, 'rental put');
      return send(res, 200, rental);
    }
    if (req.method === 'DELETE' && id !== undefined) {
      if (find(id) === undefined) return send(res, 404, { error: `no rental ${id}` });
      await deleteRental(bus, id);
      const live = await until(() => find(id) === undefined);
      o.log.info({ rentalId: id, live }, 'rental deleted');
      return send(res, 200, { deleted: id });
    }
    res.setHeader('allow', id === undefined ? 'GET' : 'GET, PUT, DELETE');
    return send(res, 405, { error: `${req.method ?? '?'} is not allowed here` });
  };

  const server = http.createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      o.log.error({ err }, 'admin request failed');
      if (!res.headersSent) send(res, 500, { error: 'internal error' });
      else res.destroy();
    });
  });
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

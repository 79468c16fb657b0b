import fs from 'node:fs';
import http from 'node:http';
import type { Rental } from '../../../bus/topics/rentals';
import { splitHostPort } from '../../base/host-port';
import { UsageError } from '../../base/args';
import { OperatorError } from '../../base/operator-error';

// The CLI's side of the admin endpoint (infra/ops/admin/server.ts). The address comes from --admin or from the
// endpoints file a running `meridian start` writes (key "admin").

/** The regions a service accepts rentals for, and the one its gateways serve ('' = any). */
export interface ServiceRegions {
  regions: string[];
  region: string;
}

export interface RentalTarget {
  /** What the running service accepts; undefined where the target cannot say (Kafka has no service to ask). */
  regions?(): Promise<ServiceRegions | undefined>;
  list(): Promise<Rental[]>;
  put(r: Rental): Promise<Rental>;
  /** false when there was no such rental. */
  remove(id: string): Promise<boolean>;
}

export const DEFAULT_ENDPOINTS_FILE = '.meridian/endpoints.json';

export function adminAddress(flag: string | undefined, endpointsFile: string | undefined): { host: string; port: number } {
  let v = flag;
  if (v === undefined) {
    const file = endpointsFile ?? DEFAULT_ENDPOINTS_FILE;
    let doc: unknown;
    try {
      doc = JSON.parse(fs.readFileSync(file, 'utf8'));
    } catch {
      throw new UsageError(`no Kafka given (KAFKA_BROKERS or --brokers) and no running service found: cannot read ${file}; start one with \`npm start\`, or pass --admin HOST:PORT or --endpoints FILE`);
    }
    const a = (doc as { admin?: unknown }).admin;
    if (typeof a !== 'string') throw new UsageError(`${file} has no "admin" address; is the service's admin endpoint enabled (admin.enabled)?`);
    v = a;
  }
  const hp = splitHostPort(v, '127.0.0.1');
  if (hp === null) throw new UsageError(`--admin: expected HOST:PORT, got ${JSON.stringify(v)}`);
  return hp;
}

function call(addr: { host: string; port: number }, method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const req = http.request({ host: addr.host, port: addr.port, method, path, headers: data === undefined ? {} : { 'content-type': 'application/json', 'content-length': data.length }, timeout: 10_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        try {
          resolve({ status: res.statusCode ?? 0, json: JSON.parse(text) });
        } catch {
          reject(new Error(`admin endpoint answered ${res.statusCode ?? '?'} with a body that is not JSON`));
        }
      });
    });
    req.on('timeout', () => req.destroy(new Error('admin endpoint did not answer within 10 s')));
    req.on('error', (e: NodeJS.ErrnoException) => reject(e.code === 'ECONNREFUSED' ? new OperatorError(`nothing answers at the admin endpoint ${addr.host}:${addr.port}: is \`meridian start\` running?`) : e));
    req.end(data);
  });
}

function fail(status: number, json: unknown): never {
  const err = (json as { error?: unknown }).error;
  throw new UsageError(typeof err === 'string' ? err : `admin endpoint answered ${status}`);
}

export function adminClient(flag: string | undefined, endpointsFile: string | undefined): RentalTarget {
  const addr = (): { host: string; port: number } => adminAddress(flag, endpointsFile);
  return {
    regions: async () => {
      const { status, json } = await call(addr(), 'GET', '/regions');
      if (status === 404) return undefined; // a service from before the route
      if (status !== 200) fail(status, json);
      const o = json as { regions?: unknown; region?: unknown };
      if (!Array.isArray(o.regions) || !o.regions.every((r) => typeof r === 'string') || typeof o.region !== 'string') throw new Error('admin endpoint: /regions answered an unexpected shape');
      return { regions: o.regions as string[], region: o.region };
    },
    list: async () => {
      const { status, json } = await call(addr(), 'GET', '/rentals');
      if (status !== 200) fail(status, json);
      return json as Rental[];
    },
    put: async (r) => {
      const { status, json } = await call(addr(), 'PUT', `/rentals/${encodeURIComponent(r.id)}`, r);
      if (status !== 200) fail(status, json);
      return json as Rental;
    },
    remove: async (id) => {
      const { status, json } = await call(addr(), 'DELETE', `/rentals/${encodeURIComponent(id)}`);
      if (status === 404) return false;
      if (status !== 200) fail(status, json);
      return true;
    },
  };
}

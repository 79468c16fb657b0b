import fs from 'node:fs';
import path from 'node:path';

// What `meridian start` serves, as the endpoints file a test, script or newcomer reads instead of guessing ports.
// The keys are a public interface: keep them stable; a surface that does not run is absent, never null.

export interface HttpWs {
  http: string;
  ws: string;
}

/** Local demo credentials (single-machine runs only). */
export interface DemoEndpoints {
  /** A submission API key of the local rental (UUID). */
  apiKey?: string;
  tipAccounts?: string[];
  minTipLamports?: number;
  /** A funded keypair of the local chain, 64 bytes (seed ‖ public key) as numbers, like a Solana CLI keypair file. */
  payerSecretKey?: number[];
  /** Base58 accounts the demo traffic sends from: subscribe to one to see transactions. */
  accounts?: string[];
  /** Base58 key of the lookup table the demo's v0 transfers name their recipients through (demo.lookupTable). */
  lookupTable?: string;
}

export interface Endpoints {
  /** gRPC v1 stream, HOST:PORT. */
  stream?: string;
  /** Shred ingest, udp://HOST:PORT. */
  ingest?: string;
  /** Prometheus metrics URL (health and readiness beside it: /healthz, /readyz). */
  metrics?: string;
  /** The local chain node (JSON-RPC over HTTP and its WebSocket). */
  chain?: HttpWs;
  rpc?: HttpWs;
  submit?: { http?: string; quic?: string; udp?: string };
  /** Loopback-only rentals admin endpoint, HOST:PORT (single-machine runs; `meridian rentals …` uses it). */
  admin?: string;
  /** Per EVM chain id. */
  evm?: Record<string, HttpWs>;
  demo?: DemoEndpoints;
}

export const DEFAULT_ENDPOINTS_FILE = path.join('.meridian', 'endpoints.json');

/** Writes the file atomically (temp file + rename in the same folder), creating the folder. */
export function writeEndpointsFile(file: string, endpoints: Endpoints): void {
  fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(endpoints, null, 2) + '\n', { mode: 0o600 }); // it holds a funded key
  fs.renameSync(tmp, file);
}

/** "http://h:p/x" → "h:p", "udp://h:p" → "h:p", "h:p" unchanged: what the start banner shows (no URLs in logs). */
export function hostPortOf(address: string): string {
  const m = /^[a-z]+:\/\/([^/]+)/i.exec(address);
  return m === null ? address : m[1]!;
}

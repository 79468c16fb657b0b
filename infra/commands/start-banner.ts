import path from 'node:path';
import { hostPortOf, type Endpoints } from '../base/endpoints';

// What `meridian start` prints once everything listens: every address a user needs in one place, as HOST:PORT
// (URLs stay in the endpoints file; the logging rule keeps them out of output), and a subscribe command that
// works from the user's current directory.

const STREAM_DEFAULT = '127.0.0.1:20202'; // the subscribe CLI's default --url

export interface BannerContext {
  endpointsFile: string;
  /** The CLI script being run (process.argv[1]) and the user's directory, to spell a runnable hint. */
  cliScript: string;
  cwd: string;
}

type Row = [name: string, address: string, what: string];

/** Columns as wide as their widest cell, so a long address (HTTP and WebSocket) keeps the table straight. */
function table(rows: Row[]): string[] {
  const w0 = Math.max(...rows.map((r) => r[0].length));
  const w1 = Math.max(...rows.map((r) => r[1].length));
  return rows.map(([n, a, w]) => `  ${n.padEnd(w0)}  ${a.padEnd(w1)}  ${w}`);
}

const row = (name: string, address: string, what: string): Row => [name, address, what];

function both(a: { http?: string; ws?: string }): string {
  const h = a.http === undefined ? undefined : hostPortOf(a.http);
  const w = a.ws === undefined ? undefined : hostPortOf(a.ws);
  return h === w || w === undefined ? (h ?? '') : h === undefined ? w : `${h} ws ${w}`;
}

export function startBanner(e: Endpoints, ctx: BannerContext): string {
  const rows: Row[] = [];
  if (e.stream !== undefined) rows.push(row('stream', e.stream, 'gRPC v1 Subscribe'));
  if (e.ingest !== undefined) rows.push(row('ingest', hostPortOf(e.ingest), 'UDP shreds'));
  if (e.chain !== undefined) rows.push(row('chain', both(e.chain), 'local chain JSON-RPC (HTTP + WebSocket)'));
  if (e.rpc !== undefined) rows.push(row('rpc', both(e.rpc), 'chain gateway JSON-RPC (HTTP + WebSocket)'));
  if (e.submit !== undefined) {
    const s = e.submit;
    if (s.http !== undefined) rows.push(row('submit', hostPortOf(s.http), 'submission HTTP'));
    if (s.quic !== undefined) rows.push(row('submit', s.quic, 'submission QUIC'));
    if (s.udp !== undefined) rows.push(row('submit', s.udp, 'submission UDP'));
  }
  for (const [id, a] of Object.entries(e.evm ?? {})) rows.push(row(`evm ${id}`, both(a), 'EVM JSON-RPC (HTTP + WebSocket)'));
  if (e.metrics !== undefined) rows.push(row('metrics', hostPortOf(e.metrics), '/metrics /healthz /readyz'));
  if (e.admin !== undefined) rows.push(row('admin', e.admin, 'rentals admin (loopback only)'));
  rows.push(row('endpoints', ctx.endpointsFile, 'URLs and local demo credentials (JSON)'));

  const lines = ['meridian is running; press Ctrl-C to stop', ...table(rows)];
  const account = e.demo?.accounts?.[0];
  if (e.stream !== undefined && account !== undefined) {
    const rel = path.relative(ctx.cwd, ctx.cliScript);
    const cli = `node ${rel.includes(' ') ? JSON.stringify(rel) : rel}`;
    const url = e.stream === STREAM_DEFAULT ? '' : ` --url ${e.stream}`;
    lines.push('', 'demo transfers are flowing; watch them with:', `  ${cli} subscribe --include ${account}${url}`);
  }
  return lines.join('\n') + '\n';
}

import fs from 'node:fs';
import path from 'node:path';
import type { CommandSpec } from '../base/args';

// `meridian start`'s options, apart from start.ts so the command's body and its declaration change separately.

/** infra/config/local.json of the installed project (from infra/commands or dist/infra/commands alike), and that project's folder. */
export function localConfigFile(): { file: string; root: string } {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    const file = path.join(dir, 'infra', 'config', 'local.json');
    if (fs.existsSync(file)) return { file, root: dir };
    if (path.dirname(dir) === dir) throw new Error(`infra/config/local.json not found above ${__dirname}`);
  }
}

export const START_SPEC: CommandSpec = {
  command: 'meridian start',
  summary: 'Run the service until SIGINT, SIGTERM or SIGHUP. Without --config: everything on this machine (local chain node, embedded bus, ingest, stream, chain and EVM gateways with local anvils, submission over HTTP/UDP/QUIC, metrics, admin, billing, demo traffic), as `npm start` runs it.',
  options: [
    { name: 'config', value: 'FILE', help: 'JSON config file, a section per component; MERIDIAN__SECTION__KEY variables override it', default: 'infra/config/local.json (the single-machine service)' },
    { name: 'endpoints', value: 'FILE', help: 'write the served addresses and local demo credentials as JSON to FILE once everything listens (its folder must exist); removed on a clean stop', default: '.meridian/endpoints.json' },
  ],
  notes: `Listen addresses are config keys: metrics.listen, admin.listen, localchain.listen, ingest.listen, fanout.listen,
gateways.rpc.listen / wsListen, gateways.submit.listen, gateways.submit.udp.listen, gateways.submit.quic.listen,
gateways.evm.chains.<id>.http / ws (e.g. MERIDIAN__FANOUT__LISTEN=127.0.0.1:20203).
Without parts this machine cannot run: MERIDIAN__GATEWAYS__SUBMIT__QUIC__ENABLED=false (no Rust cargo),
MERIDIAN__LOCALCHAIN__ENABLED=false with MERIDIAN__DEMO__ENABLED=false (no litesvm build for this platform; point
gateways.rpc.upstreams and gateways.submit.forwardUrls at a real chain node).
Logs: JSON lines, or human lines on a terminal (log.format auto | json | pretty, MERIDIAN__LOG__FORMAT).`,
};

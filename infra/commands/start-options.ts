import type { CommandSpec } from '../base/args';

// `meridian start`'s options, apart from start.ts so the command's body and its declaration change separately.

export const START_SPEC: CommandSpec = {
  command: 'meridian start',
  summary: 'Run every component on this machine (local chain node, bus, ingest, fanout, gateways, metrics, demo traffic) until SIGINT or SIGTERM.',
  options: [
    { name: 'config', value: 'FILE', help: 'JSON config file, a section per component; MERIDIAN__SECTION__KEY variables override it', default: 'built-in local defaults' },
    { name: 'endpoints', value: 'FILE', help: 'write the served addresses and local demo credentials as JSON to FILE once everything listens (its folder must exist); removed on a clean stop', default: '.meridian/endpoints.json' },
  ],
  notes: `Listen addresses are config keys: ingest.listen, fanout.listen, metrics.listen
(e.g. MERIDIAN__FANOUT__LISTEN=127.0.0.1:20203). infra/config/local.json is the single-machine setup.`,
};

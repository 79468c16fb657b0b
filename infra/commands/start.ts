import fs from 'node:fs';
import path from 'node:path';
import { outputFileOption, parseCommand, noPositionals } from '../base/args';
import { loadConfig, type Config } from '../config';
import { DEFAULT_ENDPOINTS_FILE, writeEndpointsFile } from '../base/endpoints';
import { createLogger, setRootLogger } from '../base/log';
import { metrics } from '../base/metrics';
import { exportRuntimeMetrics } from '../base/runtime-metrics';
import { launch, type Running } from '../launcher';
import { localConfigFile, START_SPEC } from './start-options';
import { startBanner } from './start-banner';

// `meridian start [--config FILE] [--endpoints FILE]`: run every component on this machine until SIGINT, SIGTERM
// or SIGHUP. Without --config it runs the single-machine service (infra/config/local.json, the file `npm start`
// runs too). The endpoints file (default .meridian/endpoints.json) is written once everything listens,
// atomically, so a watcher never reads half a file; it is removed on a clean stop, so a file that exists names a
// live service.
//
// Stopping: SIGINT (Ctrl-C, or npm forwarding it), SIGTERM (process managers, `timeout`, container runtimes) and
// SIGHUP (the terminal went away) all stop every component in reverse order and exit 0. A terminal's Ctrl-C
// reaches this process twice under `npm start` (from the terminal, and forwarded by npm): repeats are ignored, and
// a stop that takes over 15 s exits anyway. A signal while components are still starting exits at once: the
// children started so far go with this process (anvil and the QUIC terminator watch it; see their modules).

/** The signals that stop the service. */
export const STOP_SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
const STOP_GRACE_MS = 15_000;

/** The built-in local config, its relative paths (the rentals file) taken from the project folder, not the caller's. */
function builtInLocalConfig(): Config {
  const { file, root } = localConfigFile();
  const cfg = loadConfig(file);
  const rentalsFile = cfg.rentals.file;
  return rentalsFile === undefined || path.isAbsolute(rentalsFile) ? cfg : { ...cfg, rentals: { ...cfg.rentals, file: path.resolve(root, rentalsFile) } };
}

export async function run(argv: string[]): Promise<number> {
  const args = parseCommand(argv, START_SPEC);
  noPositionals(args);
  // A folder the user names must exist (refused before anything starts); the default one is created.
  const endpointsFile = outputFileOption(args, 'endpoints') ?? DEFAULT_ENDPOINTS_FILE;
  const configFile = args.get('config');
  const cfg = configFile === undefined ? builtInLocalConfig() : loadConfig(configFile);
  const log = createLogger({ level: cfg.log.level, format: cfg.log.format });
  setRootLogger(log);
  exportRuntimeMetrics(metrics); // process_* and nodejs_* series of this process (fanout workers add their own)

  let running: Running | undefined;
  let stopWith: ((sig: NodeJS.Signals) => void) | undefined;
  let requested: NodeJS.Signals | undefined;
  const onSignal = (sig: NodeJS.Signals): void => {
    if (requested !== undefined) return; // the same stop, asked again (npm forwards the terminal's Ctrl-C)
    requested = sig;
    if (running === undefined) {
      log.info({ signal: sig }, 'stopped while starting');
      process.exit(0);
    }
    stopWith?.(sig);
  };
  for (const s of STOP_SIGNALS) process.on(s, onSignal);

  running = await launch(cfg, log);
  try {
    writeEndpointsFile(endpointsFile, running.endpoints);
  } catch (e) {
    await running.stop();
    throw new Error(`cannot write the endpoints file ${endpointsFile} (--endpoints): ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  log.info({ serving: Object.keys(running.endpoints), config: configFile ?? 'built-in local' }, 'meridian started');
  process.stderr.write(startBanner(running.endpoints, { endpointsFile, cliScript: process.argv[1] ?? 'dist/infra/cli.js', cwd: process.cwd() }));

  const sig = await new Promise<NodeJS.Signals>((resolve) => {
    stopWith = resolve;
  });
  log.info({ signal: sig }, 'shutting down');
  const timer = setTimeout(() => {
    log.error(`graceful shutdown took over ${STOP_GRACE_MS / 1000} s; exiting`);
    process.exit(1);
  }, STOP_GRACE_MS);
  timer.unref();
  fs.rmSync(endpointsFile, { force: true });
  await running.stop();
  for (const s of STOP_SIGNALS) process.off(s, onSignal);
  log.info('stopped');
  return 0;
}

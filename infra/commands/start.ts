import fs from 'node:fs';
import { outputFileOption, parseCommand, noPositionals } from '../base/args';
import { loadConfig } from '../config';
import { DEFAULT_ENDPOINTS_FILE, writeEndpointsFile } from '../base/endpoints';
import { createLogger, setRootLogger } from '../base/log';
import { launch } from '../launcher';
import { START_SPEC } from './start-options';
import { startBanner } from './start-banner';

// `meridian start [--config FILE] [--endpoints FILE]`: run every component on this machine until SIGINT/SIGTERM.
// The endpoints file (default .meridian/endpoints.json) is written once everything listens, atomically, so a
// watcher never reads half a file; it is removed on a clean stop, so a file that exists names a live service.

export async function run(argv: string[]): Promise<number> {
  const args = parseCommand(argv, START_SPEC);
  noPositionals(args);
  // A folder the user names must exist (refused before anything starts); the default one is created.
  const endpointsFile = outputFileOption(args, 'endpoints') ?? DEFAULT_ENDPOINTS_FILE;
  const cfg = loadConfig(args.get('config'));
  const log = createLogger({ level: cfg.log.level });
  setRootLogger(log);

  const running = await launch(cfg, log);
  try {
    writeEndpointsFile(endpointsFile, running.endpoints);
  } catch (e) {
    await running.stop();
    throw new Error(`cannot write the endpoints file ${endpointsFile} (--endpoints): ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  log.info({ serving: Object.keys(running.endpoints) }, 'meridian started');
  process.stderr.write(startBanner(running.endpoints, { endpointsFile, cliScript: process.argv[1] ?? 'dist/infra/cli.js', cwd: process.cwd() }));

  await new Promise<void>((resolve) => {
    const onSignal = (sig: NodeJS.Signals): void => {
      log.info({ signal: sig }, 'shutting down');
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      resolve();
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
  const timer = setTimeout(() => {
    log.error('graceful shutdown took over 15 s; exiting');
    process.exit(1);
  }, 15_000);
  timer.unref();
  fs.rmSync(endpointsFile, { force: true });
  await running.stop();
  log.info('stopped');
  return 0;
}

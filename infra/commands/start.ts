import fs from 'node:fs';
import { expectOnly, parseArgs } from '../args';
import { loadConfig } from '../config';
import { DEFAULT_ENDPOINTS_FILE, writeEndpointsFile } from '../endpoints';
import { createLogger, setRootLogger } from '../log';
import { launch } from '../launcher';
import { startBanner } from './start-banner';

// `meridian start [--config FILE] [--endpoints FILE]`: run every component on this machine until SIGINT/SIGTERM.
// The endpoints file (default .meridian/endpoints.json) is written once everything listens, atomically, so a
// watcher never reads half a file; it is removed on a clean stop, so a file that exists names a live service.

export async function run(argv: string[]): Promise<number> {
  const args = parseArgs(argv);
  expectOnly(args, ['config', 'endpoints']);
  const cfg = loadConfig(args.get('config'));
  const log = createLogger({ level: cfg.log.level });
  setRootLogger(log);

  const running = await launch(cfg, log);
  const endpointsFile = args.get('endpoints') ?? DEFAULT_ENDPOINTS_FILE;
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

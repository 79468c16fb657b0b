import fs from 'node:fs';
import { expectOnly, parseArgs } from '../args';
import { loadConfig } from '../config';
import { createLogger, setRootLogger } from '../log';
import { launch } from '../launcher';

// `meridian start [--config FILE] [--endpoints FILE]`: run every component on this machine until SIGINT/SIGTERM.
// --endpoints gets a JSON object of what is served, written once everything listens (atomically, so a
// watcher never reads half a file).

export async function run(argv: string[]): Promise<number> {
  const args = parseArgs(argv);
  expectOnly(args, ['config', 'endpoints']);
  const cfg = loadConfig(args.get('config'));
  const log = createLogger({ level: cfg.log.level });
  setRootLogger(log);

  const running = await launch(cfg, log);
  const endpointsFile = args.get('endpoints');
  if (endpointsFile !== undefined) {
    fs.writeFileSync(`${endpointsFile}.tmp`, JSON.stringify({ ...running.endpoints, ...running.nested }, null, 2) + '\n');
    fs.renameSync(`${endpointsFile}.tmp`, endpointsFile);
  }
  // Addresses are host:port of this machine's own listeners; no credential is in them.
  log.info({ serving: [...Object.keys(running.endpoints), ...Object.keys(running.nested)] }, 'meridian started');
  if (running.endpoints.demoAccounts !== undefined) {
    process.stderr.write(`demo traffic flowing; try: meridian subscribe --include ${running.endpoints.demoAccounts.split(',')[0]}\n`);
  }

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
  await running.stop();
  log.info('stopped');
  return 0;
}

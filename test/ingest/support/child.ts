import { spawn } from 'node:child_process';
import { cliCommand, projectRoot } from '../../support/paths';

// Runs `meridian <args>` as a child process and collects its output. The child is killed (by its own pid)
// if it outlives the timeout.

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `env` adds to (or overrides) this process's environment. */
export function runCli(args: string[], timeoutMs = 120_000, env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  const { cmd, args: pre } = cliCommand();
  const child = spawn(cmd, [...pre, ...args], { cwd: projectRoot(), env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout.on('data', (b: Buffer) => out.push(b));
  child.stderr.on('data', (b: Buffer) => err.push(b));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`meridian ${args[0]} timed out after ${timeoutMs} ms; stderr: ${Buffer.concat(err).toString()}`));
    }, timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') });
    });
  });
}

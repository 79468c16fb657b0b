import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { ChildConfig, ChildReply, ChildRequest } from './fanout-child';

// The parent side of fanout-child.ts: fork it (compiled JS under dist/, or the TypeScript through ts-node in
// dev runs, like test/support/paths.ts cliCommand), wait for its address, ask it things, stop it.

const START_TIMEOUT_MS = 60_000;

export class FanoutChild {
  private constructor(
    private readonly proc: ChildProcess,
    readonly address: string,
  ) {}

  /**
   * `nodeArgs`: extra node flags for the child (e.g. --expose-gc, --cpu-prof). `build`: the root of another
   * checkout whose compiled child to run (its dist/test/fanout/fanout-child.js), so a bench can interleave an older
   * build with this one in the same run.
   */
  static async start(cc: ChildConfig, nodeArgs: string[] = [], build?: string): Promise<FanoutChild> {
    const compiled = build !== undefined || __filename.endsWith('.js');
    const script = build !== undefined ? path.join(build, 'dist', 'test', 'fanout', 'fanout-child.js') : path.join(__dirname, compiled ? 'fanout-child.js' : 'fanout-child.ts');
    const proc = fork(script, [], {
      execArgv: [...nodeArgs, ...(compiled ? [] : ['-r', 'ts-node/register/transpile-only'])],
      env: { ...process.env, FANOUT_CHILD: JSON.stringify(cc) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    try {
      const ready = await waitReply(proc, 'ready', START_TIMEOUT_MS);
      return new FanoutChild(proc, ready.address);
    } catch (e) {
      proc.kill('SIGKILL');
      throw e;
    }
  }

  get pid(): number | undefined {
    return this.proc.pid;
  }

  /** CPU, memory (peak since the last call, and now) and stats; `gc` collects first when the child exposes gc. */
  async usage(gc = false): Promise<Extract<ChildReply, { type: 'usage' }>> {
    this.proc.send({ type: 'usage', gc } satisfies ChildRequest);
    return waitReply(this.proc, 'usage', 10_000);
  }

  async feed(msg: Record<string, unknown>, timeoutMs: number): Promise<Extract<ChildReply, { type: 'fed' }>> {
    this.proc.send({ ...msg, type: 'feed' } satisfies ChildRequest);
    return waitReply(this.proc, 'fed', timeoutMs);
  }

  async close(): Promise<void> {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    const exited = new Promise<void>((r) => this.proc.once('exit', () => r()));
    this.proc.send({ type: 'close' } satisfies ChildRequest);
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }
}

function waitReply<T extends ChildReply['type']>(proc: ChildProcess, type: T, timeoutMs: number): Promise<Extract<ChildReply, { type: T }>> {
  return new Promise((resolve, reject) => {
    const done = (): void => {
      clearTimeout(timer);
      proc.off('message', onMessage);
      proc.off('exit', onExit);
    };
    const onMessage = (raw: unknown): void => {
      const m = raw as ChildReply;
      if (m.type === type) {
        done();
        resolve(m as Extract<ChildReply, { type: T }>);
      } else if (m.type === 'error') {
        done();
        reject(new Error(`fanout child: ${m.message}`));
      }
    };
    const onExit = (code: number | null): void => {
      done();
      reject(new Error(`fanout child exited (${code}) before '${type}'`));
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`fanout child: no '${type}' within ${timeoutMs} ms`));
    }, timeoutMs);
    proc.on('message', onMessage);
    proc.once('exit', onExit);
  });
}

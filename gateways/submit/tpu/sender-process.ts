import { spawn, type ChildProcess } from 'node:child_process';
import type { Log } from '../../../infra/base/log';
import { SenderDecoder, type SenderMessage } from './sender-codec';

// The TPU sender process (sender/): started with the route, started again when it exits (backoff up to
// 30 s), stopped by closing its stdin (it then lets its workers finish and reports its last counters).

export interface SenderProcessOptions {
  bin: string;
  args: string[];
  log: Log;
  onMessage: (m: SenderMessage) => void;
  /** The process is gone: every transaction it had not answered is lost for this route. */
  onExit: () => void;
  onRestart: () => void;
}

const MAX_BACKOFF_MS = 30_000;

export class SenderProcess {
  private child: ChildProcess | null = null;
  private closed = false;
  private backoff = 500;
  private restartTimer: NodeJS.Timeout | null = null;
  private helloWaiters: Array<(m: { identity: string; ephemeral: boolean }) => void> = [];
  /** HELLO received and the process running: write() takes frames (what the pipe holds is bounded by the route's in-flight cap). */
  ready = false;

  constructor(private readonly o: SenderProcessOptions) {}

  /** Starts the process; resolves with its HELLO. */
  start(): Promise<{ identity: string; ephemeral: boolean }> {
    const p = new Promise<{ identity: string; ephemeral: boolean }>((resolve) => this.helloWaiters.push(resolve));
    this.spawn();
    return p;
  }

  private spawn(): void {
    const child = spawn(this.o.bin, this.o.args, { stdio: ['pipe', 'pipe', 'pipe'] });
    this.child = child;
    const dec = new SenderDecoder();
    child.stdout!.on('data', (b: Buffer) =>
      dec.push(
        b,
        (m) => {
          if (m.kind === 'hello') {
            this.ready = true;
            this.backoff = 500;
            for (const w of this.helloWaiters.splice(0)) w({ identity: m.identity, ephemeral: m.ephemeral });
          }
          this.o.onMessage(m);
        },
        (why) => this.o.log.warn({ why }, 'tpu sender: malformed frame skipped'),
      ),
    );
    let errTail = '';
    child.stderr!.on('data', (b: Buffer) => {
      errTail = (errTail + b.toString('utf8')).slice(-2_000);
    });
    child.stdin!.on('error', () => undefined);
    child.once('error', (e) => this.o.log.error({ err: e.message }, 'tpu sender: cannot run'));
    child.once('exit', (code, signal) => {
      this.ready = false;
      if (this.child === child) this.child = null;
      this.o.onExit();
      if (this.closed) return;
      this.o.log.error({ code, signal, stderr: errTail.trim().split('\n').slice(-3).join(' | ') }, `tpu sender exited; starting it again in ${this.backoff} ms`);
      this.restartTimer = setTimeout(() => {
        this.o.onRestart();
        this.spawn();
      }, this.backoff);
      this.backoff = Math.min(MAX_BACKOFF_MS, this.backoff * 2);
    });
  }

  write(frame: Buffer): boolean {
    const c = this.child;
    if (c === null || !this.ready || c.stdin === null || c.stdin.destroyed) return false;
    c.stdin.write(frame);
    return true;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.restartTimer !== null) clearTimeout(this.restartTimer);
    const c = this.child;
    if (c === null || c.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      const t = setTimeout(() => {
        c.kill('SIGKILL');
      }, 5_000);
      c.once('exit', () => {
        clearTimeout(t);
        resolve();
      });
      c.stdin?.end();
    });
  }
}

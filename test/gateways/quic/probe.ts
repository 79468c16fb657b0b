import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import readline from 'node:readline';
import { ensureTerminatorBinary, PROBE_BIN } from '../../../gateways/submit/quic/terminator-build';

// Drives the probe client (gateways/submit/quic/terminator/probe): `sdk …` commands run the published SDK
// crate `falcon-client` unchanged; `raw …` commands use a quinn connection set up like the SDK's (ALPN
// falcon-tx, SNI falcon, Ed25519 self-signed client certificate with the key as CN) for what the SDK hides.
// One command line in, one answer line out: `ok …` or `err …`.

export class Probe {
  private readonly waiting: Array<(line: string) => void> = [];
  private readonly rl: readline.Interface;

  private constructor(private readonly child: ChildProcessWithoutNullStreams) {
    this.rl = readline.createInterface({ input: child.stdout });
    this.rl.on('line', (line) => this.waiting.shift()?.(line));
    child.stderr.resume(); // the SDK logs reconnects through tracing (no subscriber: nothing); keep the pipe drained
  }

  static async start(): Promise<Probe> {
    const bin = await ensureTerminatorBinary(PROBE_BIN);
    return new Probe(spawn(bin, [], { stdio: ['pipe', 'pipe', 'pipe'] }));
  }

  /** Sends one command and returns its answer line. */
  cmd(line: string): Promise<string> {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      this.child.stdin.write(`${line}\n`);
    });
  }

  async ok(line: string): Promise<string> {
    const a = await this.cmd(line);
    if (!a.startsWith('ok ')) throw new Error(`probe "${line.slice(0, 40)}": ${a}`);
    return a.slice(3);
  }

  async close(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = new Promise<void>((r) => this.child.once('exit', () => r()));
    this.child.stdin.end();
    const t = setTimeout(() => this.child.kill('SIGKILL'), 3_000);
    await exited;
    clearTimeout(t);
    this.rl.close();
  }
}

export const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

import { spawn, type ChildProcess } from 'node:child_process';
import dgram from 'node:dgram';
import { encodeEntryBatch } from '../../ingest/entry/entries';
import { shredBatch } from '../../ingest/shred/shredder';
import { hostPortOf } from '../../infra/base/endpoints';
import { splitHostPort } from '../../infra/base/host-port';
import { randomKeypair } from '../../infra/base/keypair';
import { cliCommand, projectRoot } from '../support/paths';

// Child processes of the CLI, as an operator runs them, with their output kept for assertions.

export interface Proc {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
  /** Resolves once stdout or stderr matches, rejects on exit or timeout. */
  waitFor(re: RegExp, timeoutMs: number, stream?: 'stdout' | 'stderr'): Promise<void>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export function runCli(args: string[], env: NodeJS.ProcessEnv = {}): Proc {
  const { cmd, args: pre } = cliCommand();
  const child = spawn(cmd, [...pre, ...args], { cwd: projectRoot(), env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  const listeners = new Set<() => void>();
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
    for (const l of listeners) l();
  });
  child.stderr!.on('data', (d: Buffer) => {
    err += d.toString();
    for (const l of listeners) l();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    waitFor(re, timeoutMs, stream) {
      return new Promise<void>((resolve, reject) => {
        const text = (): string => (stream === 'stdout' ? out : stream === 'stderr' ? err : out + err);
        const done = (e?: Error): void => {
          listeners.delete(check);
          clearTimeout(timer);
          if (e === undefined) resolve();
          else reject(e);
        };
        const check = (): void => {
          if (re.test(text())) done();
        };
        const timer = setTimeout(() => done(new Error(`timed out waiting for ${re} in ${args[0]} output:\n${out}\n${err}`)), timeoutMs);
        listeners.add(check);
        void exited.then((code) => {
          if (!re.test(text())) done(new Error(`${args[0]} exited (${code}) before ${re}:\n${out}\n${err}`));
        });
        check();
      });
    },
    async stop(signal = 'SIGINT') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const t = setTimeout(() => child.kill('SIGKILL'), 15_000);
      const code = await exited;
      clearTimeout(t);
      return code;
    },
  };
}

/**
 * Shreds one whole slot holding `tx` (one entry), signed by a fresh key, and sends it to ingest (`host:port`,
 * `udp://` allowed) over UDP. Ingest streams it when it checks no leader signature, and drops it when it does.
 */
export async function sendSlotShreds(ingest: string, slot: number, shredVersion: number, tx: Buffer): Promise<void> {
  const entries = encodeEntryBatch([{ numHashes: 1n, hash: Buffer.alloc(32, 7), txs: [tx] }]);
  await sendSlotBatch(ingest, slot, shredVersion, entries, randomKeypair().seed);
}

/** Shreds one whole slot holding the entry batch `entries`, signed by the leader seed given, and sends it over UDP. */
export async function sendSlotBatch(ingest: string, slot: number, shredVersion: number, entries: Buffer, leaderSeed: Buffer): Promise<void> {
  const batch = shredBatch(entries, { slot: BigInt(slot), parentOffset: 1, shredVersion, fecSetIndexStart: 0, chainedRoot: Buffer.alloc(32), leaderSeed32: leaderSeed, lastInSlot: true });
  const to = splitHostPort(hostPortOf(ingest), '127.0.0.1');
  if (to === null) throw new Error(`not an ingest address: ${ingest}`);
  const s = dgram.createSocket(to.host.includes(':') ? 'udp6' : 'udp4');
  try {
    for (const shred of batch.shreds) await new Promise<void>((r, j) => s.send(shred, to.port, to.host, (e) => (e ? j(e) : r())));
  } finally {
    s.close();
  }
}

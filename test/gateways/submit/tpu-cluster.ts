import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import readline from 'node:readline';
import bs58 from 'bs58';
import { LEADER_BIN, ensureTpuBinary } from '../../../gateways/submit/tpu/sender-build';
import { createLogger } from '../../../infra/base/log';
import { startLocalChain, type LeaderSpec, type LocalChain, type LocalChainOptions } from '../../../infra/local/chain';
import { LossRelay } from '../../support/udp-loss-relay';
import { startChainTpuHop, type ChainTpuHop } from './chain-hop';

// The local multi-leader cluster for the `tpu` route's tests and bench: N real TPU servers (Agave's
// `solana-streamer` QUIC server, gateways/submit/tpu/sender/leader), each on its own loopback address
// (127.0.0.2, .3, …) with its own identity, and the local chain node rotating through those identities every
// 4 slots, whose getClusterNodes names each server's address as its tpuQuic. Every packet a server hands out is
// recorded (which leader, when, in which slot) and given to the chain to execute in that leader's slots. The
// chain's own sendTransaction forwards to those TPU servers over QUIC (chain-hop.ts: Agave's client in the
// sender process), so the `rpc` routes reach the leaders one hop later than the `tpu` route. With `lossRelay`,
// each server sits behind a UDP relay that drops a seeded share of datagrams both ways, and getClusterNodes
// names the relays: every QUIC path to a leader (the route's and the chain's hop) crosses it.

export interface Arrival {
  leader: string;
  slot: number;
  at: number;
  from: string;
}

export interface TpuLeaderServer {
  identity: string;
  addr: string;
  /** Every packet received, in order. */
  packets: Buffer[];
  running(): boolean;
  stop(): Promise<void>;
}

async function startLeaderServer(bin: string, ip: string, onPacket: (p: Buffer, from: string) => void): Promise<TpuLeaderServer> {
  const seed = crypto.randomBytes(32).toString('hex');
  const child: ChildProcess = spawn(bin, ['--bind', `${ip}:0`, '--seed', seed], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (b: Buffer) => (stderr = (stderr + b.toString('utf8')).slice(-4000)));
  const packets: Buffer[] = [];
  const rl = readline.createInterface({ input: child.stdout! });
  const first = await new Promise<{ addr: string; identity: string }>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`TPU server exited with ${code}: ${stderr}`)));
    rl.on('line', (line) => {
      const [k, a, b] = line.split(' ');
      if (k === 'listening') resolve({ addr: a!, identity: b! });
      else if (k === 'packet') {
        const p = Buffer.from(b!, 'hex');
        packets.push(p);
        onPacket(p, a!);
      }
    });
  });
  let exited = false;
  child.once('exit', () => (exited = true));
  return {
    ...first,
    packets,
    running: () => !exited,
    stop: async () => {
      if (exited) return;
      await new Promise<void>((r) => {
        child.once('exit', () => r());
        child.stdin!.end();
      });
    },
  };
}

export interface TpuCluster {
  chain: LocalChain;
  servers: TpuLeaderServer[];
  /** The chain node's QUIC client to the leaders (its forward hop). */
  hop: ChainTpuHop;
  /** With `lossRelay`: one per server, in the same order. */
  relays: LossRelay[];
  /** Every relay's drop share from now on. */
  setLoss(share: number): void;
  /** Signature (base58 of the first 64 bytes after the count) → every arrival of its packet. */
  arrivals: Map<string, Arrival[]>;
  close(): Promise<void>;
}

export interface TpuClusterOptions extends Omit<LocalChainOptions, 'leaders' | 'tpuHop'> {
  leaders: number;
  /** A seeded lossy UDP relay in front of every TPU server (drop share each way). */
  lossRelay?: { loss: number; seed: number };
  /** Extra schedule entries whose contact info is unusable (tpuQuic as given: null, garbage…). */
  badContacts?: Array<string | null>;
}

export async function startTpuCluster(o: TpuClusterOptions): Promise<TpuCluster> {
  const bin = await ensureTpuBinary(LEADER_BIN);
  const arrivals = new Map<string, Arrival[]>();
  let chain: LocalChain | null = null;
  let hop: ChainTpuHop | null = null;
  const servers: TpuLeaderServer[] = [];
  const relays: LossRelay[] = [];
  const stopAll = async (): Promise<void> => {
    await hop?.close();
    await Promise.all(relays.map((r) => r.close()));
    await Promise.all(servers.map((s) => s.stop()));
  };
  try {
    for (let i = 0; i < o.leaders; i++) {
      const ip = `127.0.0.${2 + i}`;
      const s = await startLeaderServer(bin, ip, (p, from) => {
        const me = servers[i]!;
        const sig = sigOf(p);
        const slot = chain?.slot() ?? -1;
        let a = arrivals.get(sig);
        if (a === undefined) arrivals.set(sig, (a = []));
        a.push({ leader: me.identity, slot, at: Date.now(), from });
        chain?.executeFromTpu(me.identity, p);
      });
      servers.push(s);
      if (o.lossRelay !== undefined) {
        const [host, port] = s.addr.split(':');
        relays.push(await LossRelay.start({ listen: ip, upstream: { host: host!, port: Number(port) }, loss: o.lossRelay.loss, seed: o.lossRelay.seed + i }));
      }
    }
    hop = await startChainTpuHop(o.log ?? createLogger({ level: 'warn' }));
    const specs: LeaderSpec[] = servers.map((s, i) => ({ identity: s.identity, tpuQuic: relays[i]?.addr ?? s.addr }));
    for (const c of o.badContacts ?? []) specs.push({ identity: randomIdentity(), tpuQuic: c });
    const { leaders: _n, badContacts: _b, lossRelay: _l, ...chainOpts } = o;
    chain = await startLocalChain({ ...chainOpts, leaders: specs, tpuHop: hop });
  } catch (e) {
    await stopAll();
    throw e;
  }
  const c = chain;
  return {
    chain: c,
    servers,
    hop,
    relays,
    setLoss: (share) => {
      for (const r of relays) r.loss = share;
    },
    arrivals,
    close: async () => {
      await c.close();
      await stopAll();
    },
  };
}

/** A wire transaction's first signature, base58 (its trace key). */
export function sigOf(tx: Buffer): string {
  return bs58.encode(tx.subarray(1, 65));
}

function randomIdentity(): string {
  return bs58.encode(crypto.randomBytes(32));
}

import bs58 from 'bs58';
import { SenderProcess } from '../../../gateways/submit/tpu/sender-process';
import { encodeTx, type Dispatch } from '../../../gateways/submit/tpu/sender-codec';
import { ensureTpuBinary, SENDER_BIN } from '../../../gateways/submit/tpu/sender-build';
import type { Log } from '../../../infra/base/log';
import type { TpuHop } from '../../../infra/local/chain';

// The local chain node's QUIC client to the leaders' TPU (its forward hop, infra/local/chain/send-service.ts):
// the same sender process the `tpu` route runs — Agave's solana-tpu-client-next workers — with the settings
// Agave's send-transaction service gives that client (TpuClientNextClient::create_config: 4 reconnect
// attempts, worker channel 64, up to 1,024 connections), its own ephemeral unstaked identity. Hand-overs not yet
// answered by the process are capped; past the cap a send is dropped and counted (the node's retries still apply).

const MAX_IN_FLIGHT = 4_096;
/** Signatures whose hand-overs are counted (tests read them); past this the oldest are forgotten. */
const MAX_COUNTED = 100_000;

export interface ChainTpuHop extends TpuHop {
  identity: string;
  counts: Record<Dispatch | 'dropped_in_flight' | 'sender_down', number>;
  /** How many times the node handed this signature (base58) to the client: its first send and its retries. */
  handOvers(signature: string): number;
  close(): Promise<void>;
}

export async function startChainTpuHop(log: Log): Promise<ChainTpuHop> {
  const bin = await ensureTpuBinary(SENDER_BIN);
  const counts: ChainTpuHop['counts'] = { queued: 0, full: 0, gone: 0, bad_address: 0, dropped_in_flight: 0, sender_down: 0 };
  let inFlight = 0;
  let id = 0;
  const perSig = new Map<string, number>();
  const proc = new SenderProcess({
    bin,
    args: ['--reconnects', '4', '--worker-channel', '64', '--max-connections', '1024', '--stats-ms', '60000'],
    log,
    onMessage: (m) => {
      if (m.kind !== 'result') return;
      inFlight = Math.max(0, inFlight - 1);
      for (const c of m.codes) counts[c]++;
    },
    onExit: () => (inFlight = 0),
    onRestart: () => undefined,
  });
  const hello = await proc.start();
  return {
    identity: hello.identity,
    counts,
    handOvers: (sig) => perSig.get(sig) ?? 0,
    send: (raw, tpus) => {
      const sig = bs58.encode(raw.subarray(1, 65));
      perSig.set(sig, (perSig.get(sig) ?? 0) + 1);
      if (perSig.size > MAX_COUNTED) perSig.delete(perSig.keys().next().value!);
      if (inFlight >= MAX_IN_FLIGHT) {
        counts.dropped_in_flight++;
        return;
      }
      if (!proc.write(encodeTx(id++ >>> 0, tpus, raw))) {
        counts.sender_down++;
        return;
      }
      inFlight++;
    },
    close: () => proc.close(),
  };
}

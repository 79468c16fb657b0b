import { ensureCargoBinary, type CargoWorkspace } from '../cargo-build';

// The TPU sender (sender/, Agave's `solana-tpu-client-next` 4.2.2) and the test/bench leader TPU server
// (sender/leader/, Agave's `solana-streamer` 4.2.2): one cargo workspace, so the Agave crates compile once for
// both, built on first use into `$MERIDIAN_CACHE/tpu-sender/target` (default `~/.cache/meridian/…`, outside the work tree). Only a service whose
// `gateways.submit.routes` names `tpu` (and the tests/bench that use it) builds it: `npm start` with the route
// off never does.

export const SENDER_BIN = 'meridian-tpu-sender';
export const LEADER_BIN = 'meridian-tpu-leader';

export const WITHOUT_TPU = 'leave "tpu" out of gateways.submit.routes (MERIDIAN__GATEWAYS__SUBMIT__ROUTES=rpc); transactions then leave through the chain RPC routes';

const SENDER: CargoWorkspace = {
  component: 'gateways.submit.tpu',
  without: WITHOUT_TPU,
  source: ['gateways', 'submit', 'tpu', 'sender'],
  cache: 'tpu-sender',
  // solana-tpu-client-next / solana-streamer 4.2.x: the newest line rustc 1.95 builds (4.3 needs 1.97.1).
  minCargo: '1.95',
  label: '[tpu sender]',
  name: 'the TPU sender',
  wholeWorkspace: true,
};

export function ensureTpuBinary(name: string = SENDER_BIN, progress?: (line: string) => void): Promise<string> {
  return ensureCargoBinary(SENDER, name, name === LEADER_BIN ? `the test TPU server (${name})` : 'the TPU sender', 'several minutes: the Agave crates', progress);
}

import { ensureCargoBinary, workspaceDir, workspaceTargetDir, type CargoWorkspace } from '../cargo-build';

// The QUIC terminator is a small Rust program (terminator/, quinn + rustls from crates.io), built with cargo on
// first use into `$MERIDIAN_CACHE/quic-terminator` (else ~/.cache/meridian/…: cargo-build.ts workspaceTargetDir): `npm start` and `npm test` call
// ensureTerminatorBinary() (../cargo-build.ts has the how).

export const TERMINATOR_BIN = 'meridian-quic-terminator';
/** The test/bench client (drives the published SDK `falcon-client`); built only when asked for. */
export const PROBE_BIN = 'meridian-quic-probe';

/** How to run the service without the QUIC transport: its switch, and what still serves submissions. */
export const WITHOUT_QUIC = 'set MERIDIAN__GATEWAYS__SUBMIT__QUIC__ENABLED=false (gateways.submit.quic.enabled); submissions still arrive over HTTP and UDP';

const TERMINATOR: CargoWorkspace = {
  component: 'gateways.submit.quic',
  without: WITHOUT_QUIC,
  source: ['gateways', 'submit', 'quic', 'terminator'],
  cache: 'quic-terminator',
  minCargo: '1.85',
  label: '[quic terminator]',
  name: 'the QUIC terminator',
};

export function terminatorSourceDir(): string {
  return workspaceDir(TERMINATOR);
}

export function terminatorTargetDir(): string {
  return workspaceTargetDir(TERMINATOR);
}

/**
 * The path of a built binary of the terminator workspace (TERMINATOR_BIN or PROBE_BIN), building it if needed.
 * Once per process and binary; concurrent processes serialise on cargo's own lock of the target folder.
 */
export function ensureTerminatorBinary(name: string = TERMINATOR_BIN, progress?: (line: string) => void): Promise<string> {
  return ensureCargoBinary(TERMINATOR, name, name === PROBE_BIN ? `the QUIC test client (${name})` : 'the QUIC terminator', 'a few minutes', progress);
}

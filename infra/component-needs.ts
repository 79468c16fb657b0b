import type { Config } from './config';

// What each enabled component needs from another part of the config, checked before anything starts (no bus, no
// port): an operator who turns the local chain off learns in one line every component that now has nothing to
// serve from, and which setting turns each off or feeds it. The choice is refuse-to-start rather than start and
// answer 503: a gateway with no upstream can only ever answer 503, and a process that says it is running while
// serving nothing is the worse lie for a health check and for whoever reads the start summary.

/** One clause per enabled component whose upstream is missing; empty when the config is whole. */
export function unmetNeeds(cfg: Config): string[] {
  const chain = cfg.localchain.enabled;
  const out: string[] = [];
  const rpc = cfg.gateways.rpc;
  if (rpc.enabled && rpc.upstreams.length === 0 && !chain) {
    out.push('gateways.rpc.enabled (the chain JSON-RPC gateway) has no upstream: set gateways.rpc.upstreams, run the local chain (localchain.enabled), or set MERIDIAN__GATEWAYS__RPC__ENABLED=false');
  }
  const submit = cfg.gateways.submit;
  if (submit.enabled && submit.forwardUrls.length === 0 && !chain) {
    out.push('gateways.submit.enabled (the submission service) has no forward target: set gateways.submit.forwardUrls, run the local chain (localchain.enabled), or set MERIDIAN__GATEWAYS__SUBMIT__ENABLED=false');
  }
  if (cfg.gateways.submitQuic.enabled && !submit.enabled) {
    out.push('gateways.submit.quic.enabled needs the submission service (gateways.submit.enabled): turn it on, or set MERIDIAN__GATEWAYS__SUBMIT__QUIC__ENABLED=false');
  }
  if (cfg.demo.enabled && !chain) out.push('demo.enabled needs the local chain (localchain.enabled): set MERIDIAN__DEMO__ENABLED=false');
  return out;
}

import { parseExposition } from '../../infra/ops/monitoring/exposition';

// What an instance's /metrics says of its fleet (gateways/core/fleet-exchange.ts): the members it counts and
// whether its exchange is out. NaN where the series is absent (fleet limits off, or a build without them).

export interface FleetGauges {
  members: number;
  out: number;
}

export function fleetGauges(text: string, surface = 'rpc'): FleetGauges {
  const samples = parseExposition(text);
  const value = (name: string): number => samples.find((s) => s.name === name && s.labels.surface === surface)?.value ?? NaN;
  return { members: value('meridian_fleet_members'), out: value('meridian_fleet_exchange_out') };
}

/** The gauges from a /metrics URL; both NaN when it does not answer. */
export async function readFleetGauges(url: string, surface = 'rpc'): Promise<FleetGauges> {
  const text = await fetch(url).then((r) => r.text(), () => '');
  return fleetGauges(text, surface);
}

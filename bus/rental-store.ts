import type { Bus } from './bus';
import { projectRentals } from './rental-registry';
import { TOPIC } from './topics';
import { encodeRental, rentalTombstone, type Rental } from './topics/rentals';
import type { Log } from '../infra/base/log';

// Writing and reading rentals as events: one record per rental on the compacted `rentals` topic, a tombstone
// removes it. Every surface's projection follows the topic, so a write here is live everywhere it is read.

export async function putRental(bus: Bus, r: Rental): Promise<void> {
  await bus.produce(TOPIC.rentals, [encodeRental(r)]);
}

export async function deleteRental(bus: Bus, id: string): Promise<void> {
  await bus.produce(TOPIC.rentals, [rentalTombstone(id)]);
}

/** Every rental on the topic now (a one-shot projection), sorted by id. */
export async function readRentals(bus: Bus, log: Log): Promise<Rental[]> {
  const p = await projectRentals(bus, log, undefined, { tailIdleMs: 300 });
  try {
    return p.all().sort((a, b) => a.id.localeCompare(b.id));
  } finally {
    await p.close();
  }
}

import type { FilterSpec } from '../filter/compile';

// A SubscribeRequest as the session reads it: plain data, whatever decoded it (the server: request-wire.ts from
// the bytes; tests: test/support/request-adapter.ts from generated objects), so sessions do not depend on
// generated code.

export interface SubscribeUpdate {
  /** The `transactions` map in wire order. Empty = "no change" (a map has no presence, so absent looks the same). */
  filters: Array<readonly [string, FilterSpec]>;
  /** Present only when the client set it (proto3 optional). */
  pingId: number | undefined;
  newSeenSlots: boolean | undefined;
}

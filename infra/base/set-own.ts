/**
 * `o[k] = v` as an own, enumerable property for any `k`. A plain assignment with k = "__proto__" sets the object's
 * prototype instead and the entry is lost (record headers are names from the wire, so any name can come).
 */
export function setOwn<T>(o: Record<string, T>, k: string, v: T): void {
  Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
}

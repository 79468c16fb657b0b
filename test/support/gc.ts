import v8 from 'node:v8';
import vm from 'node:vm';

// Memory assertions measure what is live, not how much garbage the collector has left lying around so far.
// Mocha runs without --expose-gc, so the flag is set at run time; only a context made after that has gc().

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

/** JS heap bytes in use after two full collections. */
export function liveHeapBytes(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

/** Bytes held live after two full collections: the JS heap plus the ArrayBuffers (Buffers) outside it. */
export function liveBytes(): number {
  gc();
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

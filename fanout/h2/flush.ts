// One flush per turn of the event loop for every connection that has something to send: everything written
// to any stream of a connection during the turn (a whole bus batch of responses, pings, trailers) leaves in one
// socket write. setImmediate runs after the turn's I/O and timers, so responses are held for no longer than
// the turn that produced them.

export interface Flushable {
  flush(): void;
}

const dirty: Flushable[] = [];
let scheduled = false;

function flushAll(): void {
  scheduled = false;
  // A flush may make another connection dirty (a drain listener writes); those wait for the next turn.
  const n = dirty.length;
  for (let i = 0; i < n; i++) dirty[i]!.flush();
  dirty.splice(0, n);
}

/** The caller keeps its own dirty flag, so each connection is listed at most once per turn. */
export function scheduleFlush(c: Flushable): void {
  dirty.push(c);
  if (!scheduled) {
    scheduled = true;
    setImmediate(flushAll);
  }
}

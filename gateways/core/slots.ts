// Concurrency slots per key with a bounded wait: at most `limit` held at once per key; a caller that finds
// none free waits in a FIFO queue for at most `maxWaitMs`, and the queue itself is capped per key and in total
// (beyond either cap the caller is refused at once, as if its wait had run out). A request may need several
// slots (a batch with several scan calls); it takes them all at once or waits, so two requests can never hold
// half of what each needs.

export type SlotGrant = { ok: true; release: () => void } | { ok: false; why: 'timeout' | 'queue_full' };

interface Waiter {
  n: number;
  resolve: (g: SlotGrant) => void;
  timer: NodeJS.Timeout;
  done: boolean;
}

interface KeyState {
  held: number;
  queue: Waiter[];
}

export interface SlotOptions {
  maxWaitMs: number;
  /** Waiting requests per key at most. */
  maxQueuePerKey: number;
  /** Waiting requests over all keys at most. */
  maxQueueTotal: number;
}

export class Slots {
  private readonly keys = new Map<string, KeyState>();
  private waiting = 0;

  constructor(private readonly opts: SlotOptions) {}

  /** Takes `n` slots of `key` (n is capped at `limit`), now or after a wait. Synchronous when slots are free. */
  acquire(key: string, n: number, limit: number): SlotGrant | Promise<SlotGrant> {
    const want = Math.max(1, Math.min(n, limit));
    let st = this.keys.get(key);
    if (st === undefined) {
      st = { held: 0, queue: [] };
      this.keys.set(key, st);
    }
    if (st.queue.length === 0 && st.held + want <= limit) {
      st.held += want;
      return { ok: true, release: this.releaser(key, st, want, limit) };
    }
    if (limit <= 0 || st.queue.length >= this.opts.maxQueuePerKey || this.waiting >= this.opts.maxQueueTotal) return { ok: false, why: 'queue_full' };
    const state = st;
    return new Promise<SlotGrant>((resolve) => {
      const w: Waiter = {
        n: want,
        done: false,
        resolve,
        timer: setTimeout(() => {
          if (w.done) return;
          w.done = true;
          this.waiting--;
          state.queue.splice(state.queue.indexOf(w), 1);
          resolve({ ok: false, why: 'timeout' });
          this.drain(key, state, limit); // a big waiter at the head may have blocked smaller ones
        }, this.opts.maxWaitMs),
      };
      this.waiting++;
      state.queue.push(w);
    });
  }

  /** Slots held now for `key` (tests, metrics). */
  held(key: string): number {
    return this.keys.get(key)?.held ?? 0;
  }

  private releaser(key: string, st: KeyState, n: number, limit: number): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      st.held -= n;
      this.drain(key, st, limit);
    };
  }

  private drain(key: string, st: KeyState, limit: number): void {
    while (st.queue.length > 0 && st.held + st.queue[0]!.n <= limit) {
      const w = st.queue.shift()!;
      w.done = true;
      clearTimeout(w.timer);
      this.waiting--;
      st.held += w.n;
      w.resolve({ ok: true, release: this.releaser(key, st, w.n, limit) });
    }
    if (st.held === 0 && st.queue.length === 0) this.keys.delete(key);
  }
}

import assert from 'node:assert/strict';
import type { StreamError } from '../../fanout/errors';
import type { SessionPort } from '../../fanout/v1/session';

/** A SessionPort that records writes, pushes back on demand (`accepting`), and drains when told. */
export class FakePort implements SessionPort {
  readonly written: Buffer[] = [];
  accepting = true;
  ended: StreamError | undefined | 'ok';
  private drains: Array<() => void> = [];
  write(chunk: Buffer): boolean {
    this.written.push(chunk);
    return this.accepting;
  }
  once(_e: 'drain', l: () => void): unknown {
    this.drains.push(l);
    return this;
  }
  end(error?: StreamError): void {
    assert.equal(this.ended, undefined, 'end called twice');
    this.ended = error ?? 'ok';
  }
  drain(): void {
    this.accepting = true;
    const d = this.drains.splice(0);
    for (const l of d) l();
  }
}

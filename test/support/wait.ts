/**
 * Polls `cond` (sync or async) every `intervalMs` until it holds; rejects naming `what` after timeoutMs. The one
 * poll helper of the tests: a wait for something observable, never a sleep standing in for it.
 */
export async function waitFor(cond: () => boolean | Promise<boolean>, timeoutMs = 60_000, what = 'condition', intervalMs = 10): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

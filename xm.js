const m = new Map(); const N = 100000;
for (let i = 0; i < N; i++) m.set('k' + i, i);
let n = N;
for (let r = 0; r < 6; r++) {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < 50000; i++) { m.delete(m.keys().next().value); m.set('k' + (n++), n); }
  console.log('fifo evict µs/op', (Number(process.hrtime.bigint() - t0) / 1e3 / 50000).toFixed(3));
}

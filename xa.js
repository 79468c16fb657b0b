const { AgedMap } = require(process.argv[2]);
const m = new AgedMap(120000, 100000);
let n = 0, t = 0;
for (let r = 0; r < 6; r++) {
  const c0 = process.cpuUsage();
  for (let i = 0; i < 100000; i++) { t += 0.2; const k = 'k' + (n++); m.write(k, t, () => ({ at: t })); if (i % 3 === 0) m.reinsert('k' + (n - 5000), { at: t }); }
  const c = process.cpuUsage(c0);
  process.stdout.write(((c.user + c.system) / 100000).toFixed(3) + ' ');
}
console.log('µs per write', process.argv[2], m.size);

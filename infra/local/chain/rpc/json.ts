// JSON out with u64 fidelity: a bigint is written as a bare integer (a real node writes rentEpoch
// u64::MAX as 18446744073709551615; kit reads big integers losslessly, web3.js as a number).

const BIG = '\u0000big:';
// JSON.stringify escapes the NUL, so the marker appears as the six characters \u0000 in the output.
const BIG_RE = /"\\u0000big:(-?\d+)"/g;

export function stringify(v: unknown): string {
  let sawBig = false;
  const s = JSON.stringify(v, (_k, x: unknown) => {
    if (typeof x === 'bigint') {
      sawBig = true;
      return BIG + x.toString();
    }
    return x;
  });
  return sawBig ? s.replace(BIG_RE, '$1') : s;
}

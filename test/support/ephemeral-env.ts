// MERIDIAN__A__B__KEY=host:0 for every HOST:PORT value of a config, so a test runs a config's every listener on an
// ephemeral port (parallel runs never collide). Every HOST:PORT value in our configs is a listener (targets are
// URLs), so a surface that adds one is covered without touching the tests.

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

const HOST_PORT = /^(\[[0-9a-fA-F:.]+\]|[\w.-]+):\d{1,5}$/;

/** Environment names: camelCase → SNAKE_CASE under MERIDIAN__, which the config loader maps back. */
export function ephemeralListenEnv(config: Json, at: string[] = []): Record<string, string> {
  const out: Record<string, string> = {};
  if (config === null || typeof config !== 'object' || Array.isArray(config)) return out;
  for (const [k, v] of Object.entries(config)) {
    if (typeof v === 'string') {
      const m = HOST_PORT.exec(v);
      if (m === null) continue;
      const name = ['MERIDIAN', ...[...at, k].map((p) => p.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase())].join('__');
      out[name] = `${m[1]}:0`;
    } else {
      Object.assign(out, ephemeralListenEnv(v, [...at, k]));
    }
  }
  return out;
}

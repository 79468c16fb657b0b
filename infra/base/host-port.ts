/** "host:port" or "[v6]:port" → parts; an empty host becomes `emptyHost`. null when it is not that shape. */
export function splitHostPort(v: string, emptyHost: string): { host: string; port: number } | null {
  const m = /^(.*):(\d{1,5})$/.exec(v);
  if (m === null || Number(m[2]) > 65535) return null;
  const host = m[1]!.replace(/^\[(.*)\]$/, '$1');
  return { host: host === '' ? emptyHost : host, port: Number(m[2]) };
}

import fs from 'node:fs';

// The kernel's count of datagrams it dropped for ingest's socket: what arrived while the socket's receive
// buffer (SO_RCVBUF) was full because ingest did not read fast enough. Linux only; read on scrape.
//
//   /proc/net/udp, /proc/net/udp6 — one line per socket:
//     sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ref pointer drops
//     local_address is HEXADDR:HEXPORT; `drops` (the last field) counts this socket's drops.
//   /proc/net/snmp — "Udp: … RcvbufErrors …": the same drops summed over every UDP socket of the network
//     namespace (a host-wide cross-check, and what `netstat -su` calls "receive buffer errors").

/** Sums the `drops` column over the sockets bound to `port`; null when /proc cannot tell (not Linux). */
export function socketDrops(port: number, ipv6: boolean): number | null {
  let text: string;
  try {
    text = fs.readFileSync(ipv6 ? '/proc/net/udp6' : '/proc/net/udp', 'latin1');
  } catch {
    return null;
  }
  const want = ':' + port.toString(16).toUpperCase().padStart(4, '0');
  let drops = 0;
  let found = false;
  for (const line of text.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length < 13 || !f[1]!.endsWith(want)) continue;
    found = true;
    drops += Number(f[f.length - 1]);
  }
  return found ? drops : null;
}

/** Udp RcvbufErrors of /proc/net/snmp (the whole network namespace); null when absent. */
export function udpRcvbufErrors(): number | null {
  let text: string;
  try {
    text = fs.readFileSync('/proc/net/snmp', 'latin1');
  } catch {
    return null;
  }
  const rows = text.split('\n').filter((l) => l.startsWith('Udp:'));
  if (rows.length < 2) return null;
  const names = rows[0]!.trim().split(/\s+/);
  const values = rows[1]!.trim().split(/\s+/);
  const i = names.indexOf('RcvbufErrors');
  return i < 0 ? null : Number(values[i]);
}

import { ConfigError, bool, hostPort, int, num, optStr, section } from '../../../infra/base/config-read';

// Section `gateways.submit.quic` (env: MERIDIAN__GATEWAYS__SUBMIT__QUIC__<KEY>). Every limit of the listener is here; the ones
// the QUIC stack itself enforces (streams, idle timeout, handshake rate, total connections) are handed to the
// terminator process, the others (connections per key, the stream/datagram pair window) are kept here.

export interface QuicConfig {
  enabled: boolean;
  host: string;
  port: number;
  /** Open connections per API key; past it a new connection is closed with "too many connections". */
  maxConnectionsPerKey: number;
  /** Open connections over all keys (handshakes past it are refused; admitted ones past it are closed). */
  maxConnections: number;
  /** Concurrent bidirectional streams per connection (QUIC flow control makes the client wait past it). */
  maxStreamsPerConnection: number;
  /** Concurrent unidirectional streams per connection (the older SDK form). */
  maxUniStreamsPerConnection: number;
  idleTimeoutMs: number;
  /** Handshakes per second per source IP (token bucket), and its burst. The SDK reconnects after each failed send. */
  handshakesPerSecPerIp: number;
  handshakeBurstPerIp: number;
  /** Datagram bytes one connection may have waiting in the QUIC stack. */
  datagramBufferBytes: number;
  /** A datagram and a stream carrying the same bytes on one connection within this window are one submission. */
  twinWindowMs: number;
  /** The terminator binary to run instead of building it (deployments ship a prebuilt one). */
  terminatorBinary?: string;
}

export function parseQuicConfig(raw: unknown): QuicConfig {
  const p = 'gateways.submit.quic';
  const o = section(raw, p);
  const listen = hostPort(o, 'listen', p, '127.0.0.1:5000');
  const cfg: QuicConfig = {
    enabled: bool(o, 'enabled', p, false),
    host: listen.host,
    port: listen.port,
    maxConnectionsPerKey: int(o, 'maxConnectionsPerKey', p, 8, 1),
    maxConnections: int(o, 'maxConnections', p, 4096, 1),
    maxStreamsPerConnection: int(o, 'maxStreamsPerConnection', p, 256, 1, 1 << 20),
    maxUniStreamsPerConnection: int(o, 'maxUniStreamsPerConnection', p, 64, 0, 1 << 20),
    idleTimeoutMs: int(o, 'idleTimeoutMs', p, 30_000, 100, 600_000),
    // Fractional rates allowed (0.5 = one handshake per 2 s per IP after the burst).
    handshakesPerSecPerIp: num(o, 'handshakesPerSecPerIp', p, 100, 0.001),
    handshakeBurstPerIp: int(o, 'handshakeBurstPerIp', p, 200, 1),
    datagramBufferBytes: int(o, 'datagramBufferBytes', p, 256 * 1024, 4096),
    twinWindowMs: int(o, 'twinWindowMs', p, 2_000, 0, 60_000),
  };
  const bin = optStr(o, 'terminatorBinary', p);
  if (bin !== undefined) cfg.terminatorBinary = bin;
  if (cfg.maxConnectionsPerKey > cfg.maxConnections) throw new ConfigError(`${p}.maxConnectionsPerKey: above maxConnections`);
  return cfg;
}

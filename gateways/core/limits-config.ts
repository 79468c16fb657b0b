import { int, section } from '../../infra/base/config-read';

// The proxy core's limits as a config section (`<surface>.limits`): every surface built on the core reads them
// the same way and hands them to startProxy as they are. Only the body limit's default differs by surface.

export interface ProxyLimitsConfig {
  maxBodyBytes: number;
  maxBatch: number;
  maxInflight: number;
  wsMaxConnections: number;
  wsMaxBufferedBytes: number;
  wsMaxPayload: number;
}

export function parseProxyLimits(raw: unknown, path: string, defaults: { maxBodyBytes: number }): ProxyLimitsConfig {
  const l = section(raw, path);
  return {
    maxBodyBytes: int(l, 'maxBodyBytes', path, defaults.maxBodyBytes, 64),
    maxBatch: int(l, 'maxBatch', path, 1_000, 1),
    maxInflight: int(l, 'maxInflight', path, 10_000, 1),
    wsMaxConnections: int(l, 'wsMaxConnections', path, 5_000, 1),
    wsMaxBufferedBytes: int(l, 'wsMaxBufferedBytes', path, 8 * 1024 * 1024, 1024),
    wsMaxPayload: int(l, 'wsMaxPayload', path, 16 * 1024 * 1024, 1024),
  };
}

import assert from 'node:assert/strict';
import { applyEnv } from '../../../infra/config';
import { ConfigError } from '../../../infra/base/config-read';
import { DEFAULT_NEVER_RESEND, parseEvmConfig } from '../../../gateways/evm/config';

describe('gateways.evm config', () => {
  it('is off unless enabled, and serves only the listed chains on their standard local addresses', () => {
    assert.deepEqual(parseEvmConfig(undefined).chains, []);
    const c = parseEvmConfig({ enabled: true, serve: [137], chains: { 56: { anvil: true }, 137: { upstreams: ['http://node:8545'] } } });
    assert.equal(c.chains.length, 1);
    assert.equal(c.chains[0]!.chainId, 137);
    assert.deepEqual(c.chains[0]!.http, { host: '127.0.0.137', port: 8545 });
    assert.deepEqual(c.chains[0]!.ws, { host: '127.0.0.137', port: 8546 });
    assert.deepEqual(c.chains[0]!.upstreams, [{ http: 'http://node:8545', ws: 'ws://node:8545' }]);
    assert.equal(c.auth.mode, 'ip');
    assert.deepEqual(c.neverResend, DEFAULT_NEVER_RESEND);
    assert.ok(c.neverResend.includes('eth_sendRawTransaction'));
    assert.equal(c.chains[0]!.maxStallMs, 60_000);
  });

  it('does not judge progress of a local anvil that mines on demand only', () => {
    const c = parseEvmConfig({ enabled: true, serve: [56, 137], chains: { 56: { anvil: true }, 137: { anvil: true, anvilBlockTime: 2 } } });
    assert.deepEqual(c.chains.map((x) => x.maxStallMs), [0, 60_000]);
  });

  it('takes the served chains from the environment', () => {
    const raw = applyEnv({ gateways: { evm: { enabled: true, serve: [56, 137], chains: { 56: { anvil: true }, 137: { anvil: true } } } } }, { MERIDIAN__GATEWAYS__EVM__SERVE: '56' });
    const c = parseEvmConfig((raw.gateways as Record<string, unknown>).evm);
    assert.equal(c.chains.length, 1);
    assert.equal(c.chains[0]!.chainId, 56);
  });

  const bad: Array<[string, unknown, RegExp]> = [
    ['a served chain without upstreams', { enabled: true, serve: [56], chains: { 56: {} } }, /gateways\.evm\.chains\.56: no upstreams/],
    ['nothing served', { enabled: true }, /gateways\.evm\.serve/],
    ['a chain id that is not a number', { enabled: true, serve: ['bsc'] }, /gateways\.evm\.serve: expected chain ids/],
    ['an unknown chain without listen addresses', { enabled: true, serve: [1], chains: { 1: { anvil: true } } }, /set http and ws listen addresses/],
    ['an upstream of the wrong scheme', { enabled: true, serve: [56], chains: { 56: { upstreams: ['ftp://user:secret@node'] } } }, /upstreams\[0\]: expected a http: or https: URL/],
    ['http and ws on one address', { enabled: true, serve: [56], chains: { 56: { anvil: true, http: '0.0.0.0:8545', ws: '0.0.0.0:8545' } } }, /distinct addresses/],
  ];
  for (const [what, raw, re] of bad) {
    it(`rejects ${what} with a message naming the field`, () => {
      assert.throws(() => parseEvmConfig(raw), (e: unknown) => e instanceof ConfigError && re.test(e.message) && !e.message.includes('secret'));
    });
  }
});

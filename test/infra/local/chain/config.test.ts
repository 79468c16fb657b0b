import assert from 'node:assert/strict';
import { ConfigError } from '../../../../infra/base/config-read';
import { parseLocalChainConfig } from '../../../../infra/local/chain';

describe('local chain: config section `localchain`', () => {
  it('has the single-machine defaults', () => {
    const c = parseLocalChainConfig(undefined);
    assert.equal(c.enabled, true);
    assert.equal(c.host, '127.0.0.1');
    assert.equal(c.port, 18899);
    assert.equal(c.slotMs, 400);
    assert.equal(c.shredTo, undefined);
    assert.equal(c.shredVersion, undefined);
    assert.equal(c.faucetLamports, 1_000_000_000_000_000n);
    assert.equal(c.blockFormat, 'alpenglow', 'today\u2019s blocks by default');
    assert.equal(c.updateParentEvery, 0);
  });

  it('block format: tower for old captures, UpdateParent windows only with Alpenglow, one line naming both settings', () => {
    assert.equal(parseLocalChainConfig({ blockFormat: 'tower' }).blockFormat, 'tower');
    assert.equal(parseLocalChainConfig({ updateParentEvery: '3' }).updateParentEvery, 3);
    assert.throws(() => parseLocalChainConfig({ blockFormat: 'tower', updateParentEvery: 2 }), (e: unknown) => e instanceof ConfigError && /^localchain\.updateParentEvery: .*localchain\.blockFormat/.test(e.message));
    assert.throws(() => parseLocalChainConfig({ blockFormat: 'votor' }), (e: unknown) => e instanceof ConfigError && /^localchain\.blockFormat:/.test(e.message));
  });

  it('takes environment-style strings (MERIDIAN__LOCALCHAIN__*)', () => {
    const c = parseLocalChainConfig({ listen: '127.0.0.1:0', slotMs: '50', shredTo: '127.0.0.1:8002', shredVersion: '6051', faucetLamports: '123456789012345678', enabled: 'false' });
    assert.equal(c.port, 0);
    assert.equal(c.slotMs, 50);
    assert.equal(c.shredTo, '127.0.0.1:8002');
    assert.equal(c.shredVersion, 6051);
    assert.equal(c.faucetLamports, 123456789012345678n);
    assert.equal(c.enabled, false);
  });

  it('names the offending field', () => {
    assert.throws(() => parseLocalChainConfig({ slotMs: 0 }), (e: unknown) => e instanceof ConfigError && /^localchain\.slotMs:/.test(e.message));
    assert.throws(() => parseLocalChainConfig({ shredTo: 'nowhere' }), (e: unknown) => e instanceof ConfigError && /^localchain\.shredTo:/.test(e.message));
    assert.throws(() => parseLocalChainConfig({ faucetLamports: -1 }), (e: unknown) => e instanceof ConfigError && /^localchain\.faucetLamports:/.test(e.message));
    assert.throws(() => parseLocalChainConfig({ ledgerSlots: 10 }), (e: unknown) => e instanceof ConfigError && /^localchain\.ledgerSlots:/.test(e.message));
    assert.throws(() => parseLocalChainConfig('x'), ConfigError);
  });
});

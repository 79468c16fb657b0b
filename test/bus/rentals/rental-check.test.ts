import assert from 'node:assert/strict';
import { checkRental } from '../../../bus/rental-check';
import { rentalsFromList } from '../../../bus/rental-registry';
import { parseRental } from '../../../bus/topics/rentals';
import { isLoopback } from '../../../infra/ops/admin/server';

const KEY = '0f0e0d0c-0000-4000-8000-000000000001';

describe('rentals: the write-time check', () => {
  const good = parseRental({ id: 'acme-1', region: 'fra', rps: 100, tps: 10, ips: ['203.0.113.7', '2001:db8::1'], apiKeys: [KEY], tokens: ['tok-0123456789abcdef'], dedicatedPaths: ['/d/0123456789'] });

  it('accepts a well-formed rental', () => {
    assert.deepEqual(checkRental(good), []);
  });

  it('names the field of each problem: bad UUID, bad IP, negative limits, unknown region', () => {
    const bad = { ...good, region: 'mars', rps: -1, tps: 1.5, ips: ['203.0.113.7', '999.1.1.1'], evmIps: ['nope'], apiKeys: ['not-a-uuid'] };
    const problems = checkRental(bad);
    assert.equal(problems.length, 6, problems.join('\n'));
    assert.match(problems[0]!, /^region: "mars" is not a known region/);
    assert.match(problems[1]!, /^rps: -1 must be a whole number/);
    assert.match(problems[2]!, /^tps: 1.5 must be a whole number/);
    assert.match(problems[3]!, /^ips\[1\]: "999.1.1.1" is not an IPv4 or IPv6 address/);
    assert.match(problems[4]!, /^evmIps\[0\]: "nope" is not/);
    assert.match(problems[5]!, /^apiKeys\[0\]: entry 0 is not a UUID/);
  });

  it('does not echo credential values in its messages', () => {
    const problems = checkRental({ ...good, tokens: ['short secret'], dedicatedPaths: ['no-slash-secret'] });
    assert.equal(problems.length, 2);
    for (const p of problems) assert.doesNotMatch(p, /secret/);
  });

  it('takes the region list from the caller', () => {
    assert.deepEqual(checkRental({ ...good, region: 'local' }, ['local']), []);
  });

  it('refuses an unknown status when parsing, and a suspended rental is admitted nowhere', () => {
    assert.throws(() => parseRental({ id: 'x', status: 'paused' }), /status must be one of active, suspended/);
    const reg = rentalsFromList([{ ...good, status: 'suspended' }, { ...good, id: 'other', ips: ['198.51.100.1'], apiKeys: [], tokens: [], dedicatedPaths: [], evmIps: ['198.51.100.2'] }]);
    assert.equal(reg.all().length, 2);
    assert.equal(reg.byIp('203.0.113.7'), undefined);
    assert.equal(reg.byApiKey(KEY), undefined);
    assert.equal(reg.byIp('198.51.100.1')?.id, 'other');
    assert.equal(reg.byEvmIp('198.51.100.2')?.id, 'other');
    assert.equal(reg.byEvmIp('198.51.100.1')?.id, 'other', 'the EVM allowlist includes the registered egress IPs');
    assert.equal(reg.byIp('198.51.100.2'), undefined, 'an EVM entry does not open the other surfaces');
  });

  it('knows loopback addresses', () => {
    for (const a of ['127.0.0.1', '127.0.0.2', '::1', '::ffff:127.0.0.1']) assert.equal(isLoopback(a), true, a);
    for (const a of ['10.0.0.1', '::ffff:10.0.0.1', '2001:db8::1', undefined]) assert.equal(isLoopback(a), false, String(a));
  });
});

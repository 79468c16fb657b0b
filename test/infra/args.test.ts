import assert from 'node:assert/strict';
import { UsageError, expectOnly, parseArgs } from '../../infra/args';

describe('CLI argument parsing', () => {
  it('collects repeated flags, booleans and positionals', () => {
    const a = parseArgs(['cap.pcap', '--include', 'A', '--include=B', '--slots', '--url', 'h:1'], { booleans: ['slots'], multi: ['include'] });
    assert.deepEqual(a.positional, ['cap.pcap']);
    assert.deepEqual(a.all('include'), ['A', 'B']);
    assert.equal(a.get('slots'), 'true');
    assert.equal(a.get('url'), 'h:1');
  });

  it('rejects a missing value, a repeated single flag and unknown flags', () => {
    assert.throws(() => parseArgs(['--to']), UsageError);
    assert.throws(() => parseArgs(['--to', 'a', '--to', 'b']), /given twice/);
    assert.throws(() => expectOnly(parseArgs(['--nope', '1']), ['to']), /unknown option --nope/);
  });
});

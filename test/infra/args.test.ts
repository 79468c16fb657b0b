import assert from 'node:assert/strict';
import os from 'node:os';
import path from 'node:path';
import { HelpRequested, UsageError, helpText, outputFileOption, parseCommand, subcommand, type CommandSpec } from '../../infra/base/args';
import { describeListenError } from '../../infra/base/listen-error';

const SPEC: CommandSpec = {
  command: 'meridian demo',
  args: '<file>',
  summary: 'A command for tests.',
  options: [
    { name: 'include', value: 'KEY', multi: true, help: 'an account' },
    { name: 'slots', help: 'a switch' },
    { name: 'url', value: 'HOST:PORT', help: 'where', default: '127.0.0.1:1' },
    { name: 'out', value: 'FILE', help: 'output' },
  ],
  notes: 'Exit codes: 0, 2.',
};

function usageError(fn: () => unknown, message: RegExp): void {
  assert.throws(fn, (e: unknown) => e instanceof UsageError && message.test(e.message));
}

describe('CLI argument parsing (declarative)', () => {
  it('collects repeated options, switches, values with = and positionals', () => {
    const a = parseCommand(['cap.pcap', '--include', 'A', '--include=B', '--slots', '--url', 'h:1', '--', '--not-an-option'], SPEC);
    assert.deepEqual(a.positional, ['cap.pcap', '--not-an-option']);
    assert.deepEqual(a.all('include'), ['A', 'B']);
    assert.equal(a.bool('slots'), true);
    assert.equal(parseCommand(['--slots=false'], SPEC).bool('slots'), false);
    assert.equal(a.get('url'), 'h:1');
  });

  it('-h and --help anywhere before -- ask for help, generated from the spec', () => {
    for (const argv of [['-h'], ['--help'], ['file', '--url', 'x:1', '--help'], ['--frobnicate', '-h']]) {
      assert.throws(() => parseCommand(argv, SPEC), (e: unknown) => e instanceof HelpRequested && e.text === helpText(SPEC), argv.join(' '));
    }
    assert.deepEqual(parseCommand(['--', '-h'], SPEC).positional, ['-h']);
    const text = helpText(SPEC);
    assert.match(text, /^usage: meridian demo <file> \[options\]\n/);
    for (const flag of ['--include KEY ...', '--slots', '--url HOST:PORT', '--out FILE', '-h, --help']) assert.ok(text.includes(flag), flag);
    assert.match(text, /\(default: 127\.0\.0\.1:1\)/);
    assert.match(text, /Exit codes: 0, 2\.\n$/);
  });

  it('one message for an unknown option, with or without a value after it; "needs a value" only for known ones', () => {
    for (const argv of [['--frobnicate'], ['--frobnicate', '1'], ['--frobnicate=1'], ['file', '-x']]) {
      assert.throws(() => parseCommand(argv, SPEC), (e: unknown) => e instanceof UsageError && /^unknown option -{1,2}(frobnicate|x)$/.test(e.message) && e.command === 'meridian demo', argv.join(' '));
    }
    usageError(() => parseCommand(['--url'], SPEC), /^--url needs a value \(HOST:PORT\)$/);
    usageError(() => parseCommand(['--url', '--slots'], SPEC), /^--url needs a value/);
    assert.equal(parseCommand(['--url=--odd'], SPEC).get('url'), '--odd');
    usageError(() => parseCommand(['--url', 'a:1', '--url', 'b:2'], SPEC), /given twice/);
  });

  it('a command group names its sub-commands in one message, and answers help', () => {
    const group = { command: 'meridian things', names: ['put', 'get'] as const, help: 'HELP' };
    assert.deepEqual(subcommand(['get', 'x', '--y'], group), ['get', ['x', '--y']]);
    for (const h of ['-h', '--help', 'help']) assert.throws(() => subcommand([h], group), (e: unknown) => e instanceof HelpRequested && e.text === 'HELP');
    usageError(() => subcommand([], group), /^expected a command: put, get$/);
    usageError(() => subcommand(['--nope'], group), /^unknown option --nope$/);
    usageError(() => subcommand(['drop'], group), /^unknown things command "drop" \(put, get\)$/);
  });

  it('an output file whose folder does not exist is refused up front, naming the flag', () => {
    const missing = path.join(os.tmpdir(), 'meridian-no-such-folder', 'x.json');
    usageError(() => outputFileOption(parseCommand(['--out', missing], SPEC), 'out'), /--out .*folder .* does not exist; create it or choose another --out/);
    usageError(() => outputFileOption(parseCommand(['--out', os.tmpdir()], SPEC), 'out'), /is a folder/);
    assert.equal(outputFileOption(parseCommand(['--out', path.join(os.tmpdir(), 'x.json')], SPEC), 'out'), path.join(os.tmpdir(), 'x.json'));
  });
});

describe('listen errors name the setting to change', () => {
  const inUse = Object.assign(new Error('listen EADDRINUSE: address already in use 127.0.0.1:8002'), { code: 'EADDRINUSE', syscall: 'listen', address: '127.0.0.1', port: 8002 });

  it('a config key, with its environment variable', () => {
    assert.equal(
      describeListenError(inUse, 'ingest.listen'),
      'cannot listen on 127.0.0.1:8002 (ingest.listen): address already in use (EADDRINUSE); set ingest.listen in the config file or MERIDIAN__INGEST__LISTEN to a free address',
    );
  });

  it('a flag, grpc-js bind failures, and nothing for other errors', () => {
    assert.match(describeListenError(inUse, '--listen')!, /\(--listen\): address already in use \(EADDRINUSE\); choose another --listen$/);
    const grpc = new Error('No address added out of total 1 resolved errors: [listen EADDRINUSE: address already in use 127.0.0.1:20202]');
    assert.match(describeListenError(grpc, 'fanout.listen')!, /^cannot listen on 127\.0\.0\.1:20202 \(fanout\.listen\): address already in use/);
    assert.equal(describeListenError(new Error('boom')), null);
    assert.equal(describeListenError(Object.assign(new Error('x'), { code: 'ENOENT', syscall: 'open' })), null);
  });
});

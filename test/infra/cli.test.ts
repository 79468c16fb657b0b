import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import dns from 'node:dns/promises';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import type { DecodeSummary } from '../../ingest/cli/decode';
import { cliCommand, fixture, projectRoot } from '../support/paths';
import { runCli, type CliResult } from '../ingest/support/child';
import { ephemeralListenEnv, type Json } from '../support/ephemeral-env';

// The CLI as a user meets it, each case a real child process: help for every command, one message for an
// unknown option, and one clear line (no stack trace) with the right exit code for each kind of bad input.

const STACK = /\n\s+at /;

/** Every option each command must list in its help (the declaration is what help prints; this is the promise). */
const HELP: Record<string, string[]> = {
  '': ['start', 'decode', 'replay', 'record', 'subscribe', 'rentals', 'billing', 'topics', 'status', 'kafka', '--help'],
  start: ['--config FILE', '--endpoints FILE', 'ingest.listen', 'fanout.listen', 'metrics.listen'],
  decode: ['<capture>', '--format pcap|ar|u64lp', '--shred-version N', '--leader KEY'],
  replay: ['<capture>', '--to HOST:PORT', '--rate PPS', '--loop N', '--format pcap|ar|u64lp'],
  record: ['--listen HOST:PORT', '--out FILE', '--format u64lp|pcap', '--count N', '--duration SECONDS'],
  subscribe: ['--include KEY', '--exclude KEY', '--required KEY', '--slots', '--url HOST:PORT', '--token TOKEN', '--filter-name NAME', '--service', '--json', '--verbose'],
  status: ['--metrics HOST:PORT', '--endpoints FILE', '--interval SECONDS', '--watch', '--json', 'Exit status'],
  kafka: ['jars', 'start'],
  'kafka jars': [],
  'kafka start': ['--port N', '--dir DIR', '--heap MB'],
  rentals: ['put', 'get', 'list', 'delete'],
  'rentals put': ['--file FILE', '--id ID', '--region REGION', '--rps N', '--tps N', '--pps N', '--status active|suspended', '--ip IP', '--evm-ip IP', '--api-key UUID', '--token TOKEN', '--path /PATH', '--brokers', '--admin HOST:PORT', '--endpoints FILE'],
  'rentals get': ['<id>', '--brokers', '--admin HOST:PORT', '--endpoints FILE'],
  'rentals list': ['--json', '--brokers', '--admin HOST:PORT', '--endpoints FILE'],
  'rentals delete': ['<id>', '--brokers', '--admin HOST:PORT', '--endpoints FILE'],
  billing: ['run', 'report'],
  'billing run': ['--group NAME', '--out DIR', '--brokers', '--topic TOPIC'],
  'billing report': ['--out DIR', '--json', '--csv'],
  topics: ['record', 'replay'],
  'topics record': ['--topic T', '--from TIME|OFFSET', '--to TIME|OFFSET', '--out FILE', '--note TEXT', '--brokers', '--admin HOST:PORT', '--endpoints FILE'],
  'topics replay': ['<file>', '--pace fast|recorded', '--rename FROM=TO', '--brokers', '--admin HOST:PORT', '--endpoints FILE'],
};

function words(cmd: string): string[] {
  return cmd === '' ? [] : cmd.split(' ');
}

function tmpDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'meridian-cli-'));
}

/** One line on stderr (a trailing "see --help" hint aside), no stack trace. */
function oneClearLine(r: CliResult, re: RegExp): void {
  assert.doesNotMatch(r.stderr, STACK, r.stderr);
  const lines = r.stderr.split('\n').filter((l) => l.length > 0 && !/^\(see "meridian .*--help"\)$/.test(l));
  assert.equal(lines.length, 1, r.stderr);
  assert.match(lines[0]!, re);
}

describe('meridian CLI: help, options and bad input (child processes)', function () {
  this.timeout(120_000);

  describe('every command answers -h and --help with its usage and all its options, exit 0', () => {
    for (const [cmd, options] of Object.entries(HELP)) {
      it(`meridian ${cmd}${cmd === '' ? '' : ' '}--help / -h`, async () => {
        for (const flag of ['--help', '-h']) {
          const r = await runCli([...words(cmd), flag]);
          assert.equal(r.code, 0, r.stderr);
          assert.equal(r.stderr, '');
          assert.match(r.stdout, new RegExp(`^usage: meridian${cmd === '' ? '' : ` ${cmd}`} `));
          assert.match(r.stdout, /-h, --help/);
          for (const o of options) assert.ok(r.stdout.includes(o), `${cmd} ${flag} lists ${o}:\n${r.stdout}`);
        }
      });
    }

    it('start -h does not start anything, decode -h opens no file, help wins over other arguments', async () => {
      const r = await runCli(['start', '--config', '/no/such/config.json', '-h']);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^usage: meridian start/);
      const d = await runCli(['decode', '-h', '--frobnicate']);
      assert.equal(d.code, 0, d.stderr);
      assert.doesNotMatch(d.stderr, /ENOENT|-h/);
    });
  });

  describe('an unknown option: one message everywhere, exit 2, with a hint to --help', () => {
    const cases: string[][] = [
      ['start', '--frobnicate'],
      ['decode', fixture('shreds', 'demo-shreds.pcap'), '--frobnicate', '1'],
      ['replay', fixture('shreds', 'demo-shreds.pcap'), '--to', '127.0.0.1:9', '--frobnicate'],
      ['record', '--frobnicate', '1'],
      ['subscribe', '--frobnicate', 'x'],
      ['kafka', 'jars', '--frobnicate'],
      ['kafka', 'start', '--frobnicate=1'],
      ['topics', 'record', '--topic', 't', '--frobnicate'],
      ['topics', 'replay', 'x.mrec', '--frobnicate'],
    ];
    for (const argv of cases) {
      const cmd = argv[0] === 'kafka' || argv[0] === 'topics' ? `${argv[0]} ${argv[1]}` : argv[0]!;
      it(`meridian ${cmd}`, async () => {
        const r = await runCli(argv);
        assert.equal(r.code, 2, r.stderr);
        assert.equal(r.stdout, '');
        assert.doesNotMatch(r.stderr, STACK);
        assert.equal(r.stderr, `meridian ${argv[0]}: unknown option --frobnicate\n(see "meridian ${cmd} --help")\n`);
      });
    }

    it('the dispatcher: unknown option and unknown command', async () => {
      const o = await runCli(['--frobnicate']);
      assert.equal(o.code, 2);
      assert.equal(o.stderr, 'meridian: unknown option --frobnicate\n(see "meridian --help")\n');
      const c = await runCli(['frobnicate']);
      assert.equal(c.code, 2);
      assert.equal(c.stderr, 'meridian: unknown command "frobnicate"\n(see "meridian --help")\n');
      const k = await runCli(['kafka', 'frobnicate']);
      assert.equal(k.code, 2);
      assert.match(k.stderr, /^meridian kafka: unknown kafka command "frobnicate" \(jars, start\)\n\(see "meridian kafka --help"\)\n$/);
    });

    it('"needs a value" only for a known option without one', async () => {
      const r = await runCli(['decode', fixture('shreds', 'demo-shreds.pcap'), '--format']);
      assert.equal(r.code, 2);
      assert.equal(r.stderr, 'meridian decode: --format needs a value (pcap|ar|u64lp)\n(see "meridian decode --help")\n');
      const s = await runCli(['subscribe', '--url', '--json']);
      assert.equal(s.code, 2);
      assert.match(s.stderr, /^meridian subscribe: --url needs a value \(HOST:PORT\)\n/);
    });
  });

  describe('decode', () => {
    it('detects the format by content (pcap, ar, and u64lp without any magic)', async () => {
      const dir = tmpDir();
      try {
        // A u64lp copy of the ar capture, under a name that says nothing about its format.
        const { readCapture, writeU64lp } = await import('../../ingest/capture');
        const ar = readCapture(fs.readFileSync(fixture('shreds', 'testnet-385970984-turbine.ar')));
        const u = path.join(dir, 'capture.bin');
        fs.writeFileSync(u, writeU64lp(ar.packets));
        for (const [file, format, packets] of [[fixture('shreds', 'demo-shreds.pcap'), 'pcap', 512], [fixture('shreds', 'testnet-385970984-turbine.ar'), 'ar', 307], [u, 'u64lp', 307]] as const) {
          const r = await runCli(['decode', file]);
          assert.equal(r.code, 0, r.stderr);
          const lines = r.stdout.trim().split('\n');
          const summary = JSON.parse(lines[lines.length - 1]!) as DecodeSummary;
          assert.equal(summary.format, format);
          assert.equal(summary.packets, packets);
          assert.ok(summary.transactions > 0);
        }
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });

    it('a file that is no capture: one line naming the three formats and --format, exit 1', async () => {
      const dir = tmpDir();
      try {
        const f = path.join(dir, 'notes.txt');
        fs.writeFileSync(f, 'These are notes, not packets. '.repeat(20));
        const r = await runCli(['decode', f]);
        assert.equal(r.code, 1);
        assert.equal(r.stdout, '');
        oneClearLine(r, /^meridian decode: .*notes\.txt: not a pcap, ar or u64lp capture; if it is one, name its format with --format pcap\|ar\|u64lp$/);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });

    it('an empty capture is a warning, then the zero summary; a missing file one line, exit 1', async () => {
      const dir = tmpDir();
      try {
        const f = path.join(dir, 'empty.pcap');
        const { writePcap } = await import('../../ingest/capture');
        fs.writeFileSync(f, writePcap([], { dstPort: 8002 }));
        const r = await runCli(['decode', f]);
        assert.equal(r.code, 0, r.stderr);
        oneClearLine(r, /^meridian decode: warning: .*empty\.pcap holds no packets \(an empty pcap capture\)$/);
        const summary = JSON.parse(r.stdout.trim()) as DecodeSummary;
        assert.equal(summary.packets, 0);
        const m = await runCli(['decode', path.join(dir, 'missing.pcap')]);
        assert.equal(m.code, 1);
        oneClearLine(m, /^meridian decode: .*missing\.pcap: ENOENT/);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
  });

  describe('record', () => {
    it('--out feed.pcap writes pcap without --format and says so; decode reads it back', async () => {
      const dir = tmpDir();
      const out = path.join(dir, 'feed.pcap');
      const { cmd, args } = cliCommand();
      const rec = spawn(cmd, [...args, 'record', '--listen', '127.0.0.1:0', '--out', out, '--count', '3'], { cwd: projectRoot(), stdio: ['ignore', 'ignore', 'pipe'] });
      const tx = dgram.createSocket('udp4');
      try {
        let stderr = '';
        const port = await new Promise<number>((resolve, reject) => {
          rec.stderr.on('data', (b: Buffer) => {
            stderr += b.toString();
            const m = /listening on [^ ]+:(\d+), writing (\w+)/.exec(stderr);
            if (m !== null) resolve(Number(m[1]));
          });
          rec.on('exit', () => reject(new Error(`record exited early: ${stderr}`)));
        });
        assert.match(stderr, /writing pcap to .*feed\.pcap/);
        const exited = new Promise<number | null>((r) => rec.on('exit', (code) => r(code)));
        for (let i = 0; i < 3; i++) await new Promise<void>((r) => tx.send(Buffer.alloc(100 + i, i), port, '127.0.0.1', () => r()));
        assert.equal(await exited, 0, stderr);
        assert.match(stderr, /record: 3 packets \(303 bytes\) written to .*feed\.pcap as pcap\n$/);
        assert.equal(fs.readFileSync(out).readUInt32LE(0), 0xa1b2c3d4, 'pcap magic');
        const d = await runCli(['decode', out]);
        assert.equal(d.code, 0, d.stderr);
        const summary = JSON.parse(d.stdout.trim().split('\n').pop()!) as DecodeSummary;
        assert.equal(summary.format, 'pcap');
        assert.equal(summary.packets, 3);
      } finally {
        tx.close();
        if (rec.exitCode === null) rec.kill('SIGKILL');
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });

    it('refuses a missing output folder, an .ar file and a port in use, each in one line', async () => {
      const dir = tmpDir();
      const taken = dgram.createSocket('udp4');
      try {
        const missing = await runCli(['record', '--listen', '127.0.0.1:0', '--out', path.join(dir, 'nope', 'feed.pcap')]);
        assert.equal(missing.code, 2);
        oneClearLine(missing, /^meridian record: --out .*feed\.pcap: folder .*nope does not exist; create it or choose another --out$/);
        const ar = await runCli(['record', '--listen', '127.0.0.1:0', '--out', path.join(dir, 'feed.ar')]);
        assert.equal(ar.code, 2);
        oneClearLine(ar, /record writes pcap or u64lp, not ar/);
        await new Promise<void>((r) => taken.bind(0, '127.0.0.1', () => r()));
        const port = taken.address().port;
        const inUse = await runCli(['record', '--listen', `127.0.0.1:${port}`, '--out', path.join(dir, 'feed.pcap')]);
        assert.equal(inUse.code, 1);
        oneClearLine(inUse, new RegExp(`^meridian record: cannot listen on 127\\.0\\.0\\.1:${port} \\(--listen\\): address already in use \\(EADDRINUSE\\); choose another --listen$`));
        assert.ok(!fs.existsSync(path.join(dir, 'feed.pcap')), 'no empty file left behind');
      } finally {
        taken.close();
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
  });

  describe('replay', () => {
    it('a --to host that does not resolve fails at once, before sending anything, exit 2', async () => {
      const r = await runCli(['replay', fixture('shreds', 'demo-shreds.pcap'), '--to', 'no-such-host.invalid:8002']);
      assert.equal(r.code, 2);
      assert.doesNotMatch(r.stderr, /sent \d+/);
      oneClearLine(r, /^meridian replay: --to: host "no-such-host\.invalid" does not resolve \((ENOTFOUND|EAI_AGAIN|EAI_FAIL|ESERVFAIL)\); give an IP address or a resolvable name$/);
    });

    it('a name that resolves is resolved once and used', async () => {
      // Bind where the system resolver puts "localhost" (127.0.0.1 or ::1), as replay will resolve it.
      const local = await dns.lookup('localhost');
      const rx = dgram.createSocket(local.family === 6 ? 'udp6' : 'udp4');
      let got = 0;
      rx.on('message', () => got++);
      await new Promise<void>((r) => rx.bind(0, local.address, () => r()));
      // The whole capture (377 kB) fits the socket buffer, so a busy test process loses none of it.
      rx.setRecvBufferSize(4 * 1024 * 1024);
      try {
        const r = await runCli(['replay', fixture('shreds', 'testnet-385970984-turbine.ar'), '--to', `localhost:${rx.address().port}`, '--rate', '5000']);
        assert.equal(r.code, 0, r.stderr);
        assert.match(r.stderr, /sent 307\/307 packets/);
        const deadline = Date.now() + 5000;
        while (got < 307 && Date.now() < deadline) await new Promise((res) => setTimeout(res, 20));
        assert.equal(got, 307);
      } finally {
        rx.close();
      }
    });
  });

  describe('subscribe', () => {
    it('to a port where nothing listens: one line saying so, no dangling "Resolution note", exit 1', async () => {
      const closed = net.createServer();
      await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
      const port = (closed.address() as net.AddressInfo).port;
      await new Promise<void>((r) => closed.close(() => r()));
      const r = await runCli(['subscribe', '--include', '11111111111111111111111111111111', '--url', `127.0.0.1:${port}`], 60_000);
      assert.equal(r.code, 1, r.stderr);
      assert.doesNotMatch(r.stderr, /Resolution note/);
      oneClearLine(r, new RegExp(`^meridian subscribe: nothing answers at 127\\.0\\.0\\.1:${port} \\(connection refused\\)`));
    });
  });

  describe('rentals', () => {
    it('get without an id points to `rentals get --help`; nothing answering at the admin endpoint is exit 1, not the usage code', async () => {
      const noId = await runCli(['rentals', 'get', '--admin', '127.0.0.1:1']);
      assert.equal(noId.code, 2, noId.stderr);
      assert.match(noId.stderr, /^meridian rentals: expected one rental id, got 0\n\(see "meridian rentals get --help"\)\n$/);
      const closed = net.createServer();
      await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
      const port = (closed.address() as net.AddressInfo).port;
      await new Promise<void>((r) => closed.close(() => r()));
      const r = await runCli(['rentals', 'list', '--admin', `127.0.0.1:${port}`], 60_000, { KAFKA_BROKERS: '' });
      assert.equal(r.code, 1, r.stderr);
      oneClearLine(r, new RegExp(`^meridian rentals: nothing answers at the admin endpoint 127\\.0\\.0\\.1:${port}: is \`meridian start\` running\\?$`));
    });
  });

  describe('start', () => {
    // Without --config start runs the local config: every one of its listeners moves to an ephemeral port.
    const local = JSON.parse(fs.readFileSync(path.join(projectRoot(), 'infra', 'config', 'local.json'), 'utf8')) as Json;
    function env(over: Record<string, string>): NodeJS.ProcessEnv {
      return {
        ...ephemeralListenEnv(local),
        MERIDIAN__BILLING__ENABLED: 'false',
        MERIDIAN__DEMO__ENABLED: 'false',
        LOG_LEVEL: 'error',
        ...over,
      };
    }

    it('an ingest address in use: one line naming ingest.listen, exit 1', async () => {
      const taken = dgram.createSocket('udp4');
      await new Promise<void>((r) => taken.bind(0, '127.0.0.1', () => r()));
      try {
        const port = taken.address().port;
        const r = await runCli(['start'], 120_000, env({ MERIDIAN__INGEST__LISTEN: `127.0.0.1:${port}` }));
        assert.equal(r.code, 1, r.stderr);
        oneClearLine(r, new RegExp(`^meridian start: cannot listen on 127\\.0\\.0\\.1:${port} \\(ingest\\.listen\\): address already in use \\(EADDRINUSE\\); set ingest\\.listen in the config file or MERIDIAN__INGEST__LISTEN to a free address$`));
      } finally {
        taken.close();
      }
    });

    it('a TCP address in use ends in a line naming the address, no stack trace, exit 1', async () => {
      const taken = net.createServer();
      await new Promise<void>((r) => taken.listen(0, '127.0.0.1', () => r()));
      try {
        const port = (taken.address() as net.AddressInfo).port;
        const r = await runCli(['start'], 120_000, env({ MERIDIAN__METRICS__LISTEN: `127.0.0.1:${port}` }));
        assert.equal(r.code, 1, r.stderr);
        assert.doesNotMatch(r.stderr, STACK);
        assert.match(r.stderr, new RegExp(`^meridian start: cannot listen on 127\\.0\\.0\\.1:${port}\\b.*address already in use \\(EADDRINUSE\\)`, 'm'));
      } finally {
        taken.close();
      }
    });

    it('an EVM endpoint port in use: one line naming gateways.evm.chains.<id>.http and its variable, exit 1', async () => {
      const taken = net.createServer();
      await new Promise<void>((r) => taken.listen(0, '127.0.0.1', () => r()));
      try {
        const port = (taken.address() as net.AddressInfo).port;
        const r = await runCli(['start'], 180_000, env({ MERIDIAN__GATEWAYS__EVM__CHAINS__56__HTTP: `127.0.0.1:${port}`, MERIDIAN__GATEWAYS__SUBMIT__QUIC__ENABLED: 'false' }));
        assert.equal(r.code, 1, r.stderr);
        oneClearLine(r, new RegExp(`^meridian start: cannot listen on 127\\.0\\.0\\.1:${port} \\(gateways\\.evm\\.chains\\.56\\.http\\): address already in use \\(EADDRINUSE\\); set gateways\\.evm\\.chains\\.56\\.http in the config file or MERIDIAN__GATEWAYS__EVM__CHAINS__56__HTTP to a free address$`));
      } finally {
        taken.close();
      }
    });

    it('an --endpoints file in a folder that does not exist is refused before anything starts, exit 2', async () => {
      const r = await runCli(['start', '--endpoints', path.join(os.tmpdir(), 'meridian-no-such-folder', 'endpoints.json')], 120_000, env({}));
      assert.equal(r.code, 2);
      oneClearLine(r, /^meridian start: --endpoints .*endpoints\.json: folder .*meridian-no-such-folder does not exist; create it or choose another --endpoints$/);
    });
  });
});

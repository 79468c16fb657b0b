import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Bus } from '../../../bus/bus';
import { EmbeddedBus } from '../../../bus/embedded';
import { KafkaBus } from '../../../bus/kafka';
import { projectRentals, type RentalProjection } from '../../../bus/rental-registry';
import { TOPIC, defaultTopicSpecs } from '../../../bus/topics';
import { startAdmin, type AdminServer } from '../../../infra/ops/admin/server';
import { kafkaBrokers } from '../../support/kafka';
import { quietLog } from '../../support/log-capture';
import { cliCommand } from '../../support/paths';
import { waitFor } from '../../support/wait';

// `meridian rentals …` as an operator runs it (the real CLI in a child process), against a running service's
// admin endpoint on the embedded bus and straight against Kafka. What it writes must be live in a surface's
// projection within a second, and gone within a second after delete.

const KEY = '7b1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d';

interface Ran {
  code: number | null;
  out: string;
  err: string;
}

function cli(args: string[], env: Record<string, string> = {}): Promise<Ran> {
  const { cmd, args: pre } = cliCommand();
  return new Promise((resolve) => {
    const child = spawn(cmd, [...pre, ...args], { env: { ...process.env, KAFKA_BROKERS: '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('close', (code) => resolve({ code, out, err }));
  });
}

async function liveWithin(what: string, cond: () => boolean, ms = 1_000): Promise<void> {
  await waitFor(cond, ms, what);
}

function suite(kind: 'embedded' | 'kafka'): void {
  describe(`meridian rentals on the ${kind} bus`, function () {
    this.timeout(120_000);
    let bus: Bus;
    let projection: RentalProjection;
    let admin: AdminServer | undefined;
    let target: string[];
    let env: Record<string, string> = {};
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rentals-cli-'));
    const id = `cli-${kind}-${process.pid}`;

    before(async () => {
      const { log } = quietLog();
      if (kind === 'kafka') {
        const brokers = await kafkaBrokers();
        bus = new KafkaBus({ brokers, clientId: 'rentals-cli-test', log });
        env = { KAFKA_BROKERS: brokers.join(',') };
        target = [];
      } else {
        bus = new EmbeddedBus();
        target = [];
      }
      await bus.createTopics(defaultTopicSpecs().filter((s) => s.name === TOPIC.rentals));
      projection = await projectRentals(bus, log);
      if (kind === 'embedded') {
        admin = await startAdmin(bus, projection, { host: '127.0.0.1', port: 0, regions: ['fra', 'ams', 'lon', 'nyc', 'tyo'], log });
        // The CLI finds the service through its endpoints file, as after `npm start`.
        const endpoints = path.join(dir, 'endpoints.json');
        fs.writeFileSync(endpoints, JSON.stringify({ admin: admin.address }));
        target = ['--endpoints', endpoints];
      }
    });
    after(async () => {
      await admin?.close();
      await projection?.close();
      await bus?.close();
      fs.rmSync(dir, { recursive: true, force: true });
    });

    it('puts a rental from flags; it is served within a second', async () => {
      const r = await cli(['rentals', 'put', '--id', id, '--region', 'fra', '--rps', '50', '--tps', '5', '--ip', '203.0.113.9', '--api-key', KEY, ...target], env);
      assert.equal(r.code, 0, r.err);
      assert.equal(r.out.trim(), `put ${id}`);
      await liveWithin('the API key to be admitted', () => projection.byApiKey(KEY)?.id === id);
      assert.equal(projection.byIp('203.0.113.9')?.id, id);
    });

    it('lists rentals as a table and gets one as JSON', async () => {
      const list = await cli(['rentals', 'list', ...target], env);
      assert.equal(list.code, 0, list.err);
      const lines = list.out.trim().split('\n');
      assert.match(lines[0]!, /^ID\s+REGION\s+STATUS\s+RPS\s+TPS/);
      const row = lines.find((l) => l.startsWith(id));
      assert.ok(row !== undefined, list.out);
      assert.match(row, new RegExp(`^${id}\\s+fra\\s+active\\s+50\\s+5\\s`));
      const get = await cli(['rentals', 'get', id, ...target], env);
      assert.equal(get.code, 0, get.err);
      const got = JSON.parse(get.out) as { id: string; rps: number; apiKeys: string[] };
      assert.equal(got.id, id);
      assert.equal(got.rps, 50);
      assert.deepEqual(got.apiKeys, [KEY]);
    });

    it('puts from a YAML file (an update replaces the rental whole)', async () => {
      const file = path.join(dir, 'r.yaml');
      fs.writeFileSync(file, `id: ${id}\nregion: ams\nrps: 75\ntps: 5\nips: [203.0.113.10]\n`);
      const r = await cli(['rentals', 'put', '--file', file, ...target], env);
      assert.equal(r.code, 0, r.err);
      await liveWithin('the new IP to be admitted', () => projection.byIp('203.0.113.10')?.id === id);
      assert.equal(projection.byIp('203.0.113.9'), undefined, 'the old IP is gone with the update');
      assert.equal(projection.byApiKey(KEY), undefined, 'the key was not in the new value');
    });

    it('refuses invalid rentals, naming the field, and writes nothing', async () => {
      const before = projection.all().length;
      const cases: Array<[string[], RegExp]> = [
        [['--id', 'bad-1', '--region', 'fra', '--api-key', 'not-a-uuid'], /apiKeys\[0\]: entry 0 is not a UUID/],
        [['--id', 'bad-2', '--region', 'fra', '--ip', '300.1.2.3'], /ips\[0\]: "300.1.2.3" is not an IPv4 or IPv6 address/],
        [['--id', 'bad-3', '--region', 'fra', '--rps', '-5'], /rps must be a non-negative number/],
        [['--id', 'bad-4', '--region', 'atlantis'], /region: "atlantis" is not a known region/],
      ];
      for (const [flags, message] of cases) {
        const r = await cli(['rentals', 'put', ...flags, ...target], env);
        assert.equal(r.code, 2, `${flags.join(' ')}: ${r.err}`);
        assert.match(r.err, message);
      }
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(projection.all().length, before);
    });

    it('deletes a rental; it is refused within a second; deleting again says there is none', async () => {
      const r = await cli(['rentals', 'delete', id, ...target], env);
      assert.equal(r.code, 0, r.err);
      assert.equal(r.out.trim(), `deleted ${id}`);
      await liveWithin('the IP to be refused', () => projection.byIp('203.0.113.10') === undefined);
      const again = await cli(['rentals', 'delete', id, ...target], env);
      assert.equal(again.code, 1);
      assert.match(again.err, new RegExp(`no rental ${id}`));
    });
  });
}

suite('embedded');
suite('kafka');

describe('meridian rentals without a service or Kafka', () => {
  it('says how to start one instead of failing obscurely', async () => {
    const r = await cli(['rentals', 'list', '--endpoints', path.join(os.tmpdir(), 'no-such-endpoints.json')]);
    assert.equal(r.code, 2);
    assert.match(r.err, /no running service found/);
  });

  it('answers --help with its usage and exits 0', async () => {
    const r = await cli(['rentals', '--help']);
    assert.equal(r.code, 0);
    assert.match(r.out, /^usage: meridian rentals <command>/);
    for (const c of ['put', 'get', 'list', 'delete']) assert.match(r.out, new RegExp(`^  ${c} `, 'm'));
  });
});

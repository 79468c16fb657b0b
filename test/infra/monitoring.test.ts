import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import { parseExposition, sampleNames } from '../../infra/ops/monitoring/exposition';
import { metricNames, unknownMetrics } from '../../infra/ops/monitoring/promql-names';
import { statusReport } from '../../infra/ops/monitoring/status';
import { runCli as runCliDone } from '../ingest/support/child';
import { runCli, type Proc } from '../e2e/support';
import { ephemeralListenEnv, type Json } from '../support/ephemeral-env';
import { projectRoot } from '../support/paths';
import { waitFor } from '../support/wait';

// What an operator is given to watch the service (infra/ops/monitoring/): the alert rules pass `promtool check
// rules` and their unit tests (`promtool test rules`), every rule has a case that fires and one that stays quiet,
// every metric a rule or a dashboard panel reads is one a running local service exports, a real Prometheus
// scraping that service evaluates every rule without error and none goes pending or fires, and `meridian status`
// reports the running service (and one line, exit 1, when nothing answers).
//
// promtool and prometheus come from infra/scripts/prometheus-tool.sh: PATH (Debian's `prometheus` package), a build
// in .cache, or `go install` of the Go module; the cases that need them are skipped, saying so, only where
// neither a binary nor Go can be had.

const DIR = path.join(projectRoot(), 'infra', 'ops', 'monitoring');
const RULES_FILE = path.join(DIR, 'alerts.yml');
const RULE_TESTS_FILE = path.join(DIR, 'alerts.test.yml');
const DASHBOARD_FILE = path.join(DIR, 'dashboard.json');
/** Series Prometheus makes itself for every target. */
const PROMETHEUS_OWN = ['up'];

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
interface RuleTests {
  tests: Array<{ name: string; alert_rule_test?: Array<{ alertname: string; exp_alerts?: unknown[] }> }>;
}
interface Panel {
  title?: string;
  type: string;
  targets?: Array<{ expr: string }>;
  panels?: Panel[];
}
interface Dashboard {
  panels: Panel[];
  templating: { list: Array<{ name: string; query: { query: string } | string }> };
}

function rules(): Rule[] {
  const doc = YAML.parse(fs.readFileSync(RULES_FILE, 'utf8')) as { groups: Array<{ rules: Rule[] }> };
  return doc.groups.flatMap((g) => g.rules);
}

function dashboard(): Dashboard {
  return JSON.parse(fs.readFileSync(DASHBOARD_FILE, 'utf8')) as Dashboard;
}

/** Every PromQL expression of the dashboard: panel targets (rows' nested panels too) and template variable queries. */
function dashboardExprs(d: Dashboard): string[] {
  const out: string[] = [];
  const walk = (ps: Panel[]): void => {
    for (const p of ps) {
      for (const t of p.targets ?? []) out.push(t.expr);
      walk(p.panels ?? []);
    }
  };
  walk(d.panels);
  for (const v of d.templating.list) out.push(typeof v.query === 'string' ? v.query : v.query.query);
  return out;
}

/** The path of promtool or prometheus, or null (with the reason) when this machine can have neither binary nor Go. */
function prometheusTool(tool: 'promtool' | 'prometheus'): Promise<{ bin: string } | { missing: string }> {
  return new Promise((resolve, reject) => {
    execFile('bash', [path.join(projectRoot(), 'infra', 'scripts', 'prometheus-tool.sh'), tool], { timeout: 1_500_000, maxBuffer: 16 << 20 }, (e, stdout, stderr) => {
      if (e === null) resolve({ bin: stdout.trim() });
      else if ((e as { code?: unknown }).code === 3) resolve({ missing: stderr.trim() });
      else reject(new Error(`prometheus-tool.sh ${tool} failed: ${stderr}`));
    });
  });
}

function exec(bin: string, args: string[], cwd: string): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(bin, args, { cwd, timeout: 120_000 }, (e, stdout, stderr) => resolve({ code: e === null ? 0 : typeof e.code === 'number' ? e.code : 1, out: stdout + stderr }));
  });
}

async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('monitoring: alert rules, dashboard, and meridian status', function () {
  this.timeout(180_000);

  describe('rules and dashboard as files', () => {
    it('metric names are read out of PromQL: functions, keywords, labels, durations and Grafana variables are not names', () => {
      assert.deepEqual(metricNames('sum by (job, instance) (rate(meridian_ingest_shreds_total{variant="0x96"}[2m])) == 0'), ['meridian_ingest_shreds_total']);
      assert.deepEqual(metricNames('histogram_quantile(0.99, sum by (le) (rate(a_bucket{job=~"$job"}[$__rate_interval])))'), ['a_bucket']);
      assert.deepEqual(metricNames('a / on (x) group_left (y) b > 1e3 and c offset 5m or delta(d[5m]) > 0'), ['a', 'b', 'c', 'd']);
      assert.deepEqual(metricNames('label_values(m{job=~"$job"}, instance)'), ['m']);
      assert.deepEqual(metricNames('up{job=~"meridian.*"} == 0'), ['up']);
    });

    it('the name check reports a rule or a panel that names a metric the service does not export', () => {
      const exported = new Set(['meridian_ingest_shreds_total', 'meridian_fanout_subscribers', 'up']);
      assert.deepEqual(unknownMetrics(['rate(meridian_ingest_shreds_total[1m]) == 0'], exported), []);
      assert.deepEqual(unknownMetrics(['rate(meridian_ingest_shreds_total[1m]) / rate(meridian_ingest_shredz_total[1m]) > 0', 'sum(meridian_fanout_subscriber)'], exported), ['meridian_fanout_subscriber', 'meridian_ingest_shredz_total']);
    });

    it('at least 10 alerts, each with a for:, a severity, a component and a one-line summary naming no address', () => {
      const rs = rules();
      assert.ok(rs.length >= 10, `${rs.length} alerts`);
      assert.equal(new Set(rs.map((r) => r.alert)).size, rs.length, 'alert names are unique');
      for (const r of rs) {
        assert.match(r.for ?? '', /^\d+[smh]$/, `${r.alert} has a for:`);
        assert.ok(['critical', 'warning'].includes(r.labels?.severity ?? ''), `${r.alert} severity`);
        assert.ok((r.labels?.component ?? '') !== '', `${r.alert} component`);
        const summary = r.annotations?.summary ?? '';
        assert.ok(summary.length > 0 && !summary.includes('\n'), `${r.alert} has a one-line summary`);
        assert.doesNotMatch(summary, /:\/\/|\$labels\.instance|\b\d{1,3}(\.\d{1,3}){3}\b|\w:\d{2,5}\b/, `${r.alert} summary names no URL or address`);
        assert.ok(summary.toLowerCase().startsWith(r.labels!.component === 'service' ? 'meridian' : r.labels!.component!), `${r.alert}'s summary starts with its component: ${summary}`);
      }
    });

    it('every alert has a promtool case where it fires and one where it stays quiet', () => {
      const tests = YAML.parse(fs.readFileSync(RULE_TESTS_FILE, 'utf8')) as RuleTests;
      const cases = tests.tests.flatMap((t) => t.alert_rule_test ?? []);
      for (const r of rules()) {
        const mine = cases.filter((c) => c.alertname === r.alert);
        assert.ok(mine.some((c) => (c.exp_alerts ?? []).length > 0), `${r.alert} has a case that fires`);
        assert.ok(mine.some((c) => (c.exp_alerts ?? []).length === 0), `${r.alert} has a case that stays quiet`);
      }
      const known = new Set(rules().map((r) => r.alert));
      for (const c of cases) assert.ok(known.has(c.alertname), `alerts.test.yml tests ${c.alertname}, which alerts.yml does not have`);
    });

    it('the dashboard has panels for every surface, each with a query', () => {
      const d = dashboard();
      const rows = d.panels.filter((p) => p.type === 'row').map((p) => p.title);
      for (const want of ['Ingest', 'Stream (fanout)', 'Chain gateway and EVM', 'Submission', 'Usage and billing']) assert.ok(rows.includes(want), `row ${want}`);
      for (const p of d.panels.filter((p) => p.type !== 'row')) assert.ok((p.targets ?? []).length > 0 && p.targets!.every((t) => t.expr.length > 0), `panel ${p.title} queries something`);
    });
  });

  describe('meridian status from two scrapes', () => {
    const scrape = (shreds: number, healthy: number, dropped: number): string =>
      [
        `meridian_ingest_packets_total ${shreds}`,
        `meridian_ingest_shreds_total{variant="0x96"} ${shreds}`,
        `meridian_ingest_slot_status_total{status="decoded"} ${shreds / 100}`,
        `meridian_ingest_udp_queue_drops ${dropped}`,
        `meridian_gateway_upstreams_healthy{surface="rpc"} ${healthy}`,
        'meridian_gateway_http_requests_total{surface="rpc"} 10',
      ].join('\n');
    const report = (a: string, b: string, ready = true): ReturnType<typeof statusReport> => statusReport('127.0.0.1:9464', parseExposition(a), parseExposition(b), 2, { ready, failing: ready ? [] : ['fanout'] });
    const state = (r: ReturnType<typeof statusReport>, name: string): string | undefined => r.components.find((c) => c.name === name)?.state;

    it('healthy when shreds arrive and an upstream is healthy; rates are per second over the window', () => {
      const r = report(scrape(100, 1, 0), scrape(300, 1, 0));
      assert.equal(r.healthy, true);
      assert.equal(state(r, 'ingest'), 'ok');
      assert.equal(r.components.find((c) => c.name === 'ingest')!.values.shredsPerSec, 100);
      assert.deepEqual(r.components.map((c) => c.name), ['ingest', 'rpc'], 'components without series are left out');
    });

    it('down (exit 1) when no shred arrived or no upstream is healthy; warn when ingest drops; unhealthy when not ready', () => {
      const stalled = report(scrape(100, 1, 0), scrape(100, 1, 0));
      assert.equal(state(stalled, 'ingest'), 'down');
      assert.equal(stalled.healthy, false);
      const noUpstream = report(scrape(100, 1, 0), scrape(300, 0, 0));
      assert.equal(state(noUpstream, 'rpc'), 'down');
      assert.equal(noUpstream.healthy, false);
      const dropping = report(scrape(100, 1, 0), scrape(300, 1, 5));
      assert.equal(state(dropping, 'ingest'), 'warn');
      assert.equal(dropping.healthy, true);
      const notReady = report(scrape(100, 1, 0), scrape(300, 1, 0), false);
      assert.equal(notReady.healthy, false);
    });
  });

  describe('promtool', () => {
    let promtool: string | undefined;
    before(async function () {
      this.timeout(1_500_000); // a first `go install` builds promtool
      const t = await prometheusTool('promtool');
      if ('missing' in t) {
        console.log(`      skipped: ${t.missing}`);
        this.skip();
      }
      promtool = t.bin;
    });

    it('promtool check rules accepts alerts.yml', async () => {
      const r = await exec(promtool!, ['check', 'rules', 'alerts.yml'], DIR);
      assert.equal(r.code, 0, r.out);
      assert.match(r.out, new RegExp(`SUCCESS: ${rules().length} rules found`));
    });

    it('promtool test rules passes every case of alerts.test.yml', async () => {
      const r = await exec(promtool!, ['test', 'rules', 'alerts.test.yml'], DIR);
      assert.equal(r.code, 0, r.out);
      assert.match(r.out, /SUCCESS/);
    });

    it('promtool test rules fails when a rule stops firing where its case says it fires', async () => {
      const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'meridian-rules-'));
      try {
        fs.writeFileSync(path.join(tmp, 'alerts.yml'), fs.readFileSync(RULES_FILE, 'utf8').replace('meridian_gateway_upstreams_healthy == 0', 'meridian_gateway_upstreams_healthy < 0'));
        fs.copyFileSync(RULE_TESTS_FILE, path.join(tmp, 'alerts.test.yml'));
        const r = await exec(promtool!, ['test', 'rules', 'alerts.test.yml'], tmp);
        assert.notEqual(r.code, 0, r.out);
        assert.match(r.out, /alertname: MeridianUpstreamPoolDown/);
      } finally {
        fs.rmSync(tmp, { recursive: true, force: true });
      }
    });
  });

  describe('against a running local service (meridian start, demo traffic)', function () {
    this.timeout(300_000);
    let tmp = '';
    let endpointsFile = '';
    let service: Proc | undefined;
    let metricsAt = '';
    let apiKey = '';
    let exported = new Set<string>();

    async function scrape(): Promise<string> {
      const r = await fetch(`http://${metricsAt}/metrics`);
      assert.equal(r.status, 200);
      return r.text();
    }

    before(async function () {
      this.timeout(240_000);
      tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'meridian-monitoring-'));
      endpointsFile = path.join(tmp, 'endpoints.json');
      const local = JSON.parse(fs.readFileSync(path.join(projectRoot(), 'infra', 'config', 'local.json'), 'utf8')) as Json;
      // Every listener on an ephemeral port; QUIC off (its terminator needs cargo's build, not what is watched here).
      service = runCli(['start', '--endpoints', endpointsFile], { ...ephemeralListenEnv(local), MERIDIAN__GATEWAYS__SUBMIT__QUIC__ENABLED: 'false', LOG_LEVEL: 'warn' });
      await service.waitFor(/meridian is running/, 200_000, 'stderr');
      const e = JSON.parse(fs.readFileSync(endpointsFile, 'utf8')) as { metrics: string; demo?: { apiKey?: string } };
      metricsAt = /^http:\/\/([^/]+)\/metrics$/.exec(e.metrics)![1]!;
      apiKey = e.demo?.apiKey ?? '';
      // Demo transfers went the whole way (submission → chain → shreds → ingest → bus → landed on the route).
      await waitFor(async () => parseExposition(await scrape()).some((s) => s.name === 'meridian_submit_route_landed_total' && s.value > 0), 120_000, 'a demo transfer landed', 250);
      exported = sampleNames(parseExposition(await scrape()));
    });

    after(async () => {
      await service?.stop('SIGINT');
      if (tmp !== '') fs.rmSync(tmp, { recursive: true, force: true });
    });

    it('every metric an alert rule or a dashboard panel reads is one the running service exports', () => {
      const have = new Set([...exported, ...PROMETHEUS_OWN]);
      assert.ok(exported.size > 100, `${exported.size} sample names exported`);
      const exprs = [...rules().map((r) => r.expr), ...dashboardExprs(dashboard())];
      assert.ok(exprs.length > 60, `${exprs.length} expressions`);
      assert.deepEqual(unknownMetrics(exprs, have), []);
      // …and the same check fails when a rule or a panel names one that does not exist.
      assert.deepEqual(unknownMetrics([...exprs, 'rate(meridian_ingest_shreds_totals[5m]) == 0', 'sum(meridian_fanout_subscriber{job=~"$job"})'], have), ['meridian_fanout_subscriber', 'meridian_ingest_shreds_totals']);
    });

    describe('a real Prometheus scraping it with the rules loaded', () => {
      let prometheus: string | undefined;
      let child: ChildProcess | undefined;
      let api = '';
      before(async function () {
        this.timeout(1_500_000);
        const t = await prometheusTool('prometheus');
        if ('missing' in t) {
          console.log(`      skipped: ${t.missing}`);
          this.skip();
        }
        prometheus = t.bin;
      });
      after(async () => {
        if (child !== undefined && child.exitCode === null) {
          const exited = new Promise((r) => child!.once('exit', r));
          child.kill('SIGTERM');
          await exited;
        }
      });

      it('evaluates every rule without error, and none goes pending or fires while the service is healthy', async function () {
        const dir = fs.mkdtempSync(path.join(tmp, 'prometheus-'));
        fs.writeFileSync(
          path.join(dir, 'prometheus.yml'),
          YAML.stringify({
            global: { scrape_interval: '1s', evaluation_interval: '1s' },
            rule_files: [RULES_FILE],
            scrape_configs: [{ job_name: 'meridian', static_configs: [{ targets: [metricsAt] }] }],
          }),
        );
        const port = await freePort();
        api = `http://127.0.0.1:${port}/api/v1`;
        let log = '';
        child = spawn(prometheus!, [`--config.file=${path.join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${path.join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'], { stdio: ['ignore', 'pipe', 'pipe'] });
        child.stdout!.on('data', (d: Buffer) => (log += d.toString()));
        child.stderr!.on('data', (d: Buffer) => (log += d.toString()));
        const get = async <T>(p: string): Promise<T> => {
          const r = await fetch(`${api}${p}`);
          return ((await r.json()) as { data: T }).data;
        };
        const scrapes = async (): Promise<number> => {
          try {
            const r = await get<{ result: Array<{ value: [number, string] }> }>(`/query?query=${encodeURIComponent('count_over_time(up{job="meridian"}[10m])')}`);
            return Number(r.result[0]?.value[1] ?? 0);
          } catch {
            return 0; // not listening yet
          }
        };
        const active: string[] = [];
        const checkAlerts = async (): Promise<void> => {
          const a = await get<{ alerts: Array<{ labels: Record<string, string>; state: string }> }>('/alerts');
          for (const x of a.alerts) active.push(`${x.labels.alertname} ${x.state} ${JSON.stringify(x.labels)}`);
        };
        // The windows need a few samples before "nothing arrived" can mean anything; from then on, 20 evaluations.
        await waitFor(async () => child!.exitCode !== null || (await scrapes()) >= 10, 60_000, 'Prometheus scraped the service 10 times', 250);
        assert.equal(child.exitCode, null, `prometheus exited:\n${log}`);
        await waitFor(async () => {
          await checkAlerts();
          return (await scrapes()) >= 30;
        }, 90_000, '20 more scrapes and evaluations', 500);
        const groups = await get<{ groups: Array<{ rules: Array<{ name: string; health: string; lastError?: string; lastEvaluation: string; state: string }> }> }>('/rules');
        const loaded = groups.groups.flatMap((g) => g.rules);
        assert.deepEqual(loaded.map((r) => r.name).sort(), rules().map((r) => r.alert).sort(), 'Prometheus loaded every rule');
        for (const r of loaded) {
          assert.equal(r.health, 'ok', `${r.name}: ${r.lastError ?? ''}`);
          assert.ok(Date.parse(r.lastEvaluation) > Date.now() - 60_000, `${r.name} evaluated (last ${r.lastEvaluation})`);
          assert.equal(r.state, 'inactive', r.name);
        }
        assert.deepEqual(active, [], 'no alert pending or firing');
        // The rules saw the service's series, not an empty database: a healthy service's shreds arrive.
        const shreds = await get<{ result: Array<{ value: [number, string] }> }>(`/query?query=${encodeURIComponent('sum(rate(meridian_ingest_shreds_total[1m]))')}`);
        assert.ok(Number(shreds.result[0]?.value[1] ?? 0) > 0, 'Prometheus sees shreds arriving');
      });
    });

    describe('meridian status', () => {
      interface Report {
        target: string;
        ready: boolean;
        healthy: boolean;
        components: Array<{ name: string; state: string; values: Record<string, number>; line: string }>;
      }
      const component = (r: Report, name: string): Report['components'][number] => {
        const c = r.components.find((x) => x.name === name);
        assert.ok(c !== undefined, `${name} in ${JSON.stringify(r.components.map((x) => x.name))}`);
        return c;
      };

      it('prints one line per component with rates from the demo traffic, exit 0, and no URL or key', async () => {
        const r = await runCliDone(['status', '--endpoints', endpointsFile, '--interval', '1'], 60_000);
        assert.equal(r.code, 0, r.stdout + r.stderr);
        assert.equal(r.stderr, '');
        const lines = r.stdout.trimEnd().split('\n');
        assert.match(lines[0]!, new RegExp(`^meridian at ${metricsAt.replace(/\./g, '\\.')}: ready; healthy \\(rates over the last [\\d.]+ s\\)$`));
        for (const name of ['process', 'ingest', 'stream', 'rpc', 'evm-56', 'evm-137', 'submit', 'usage', 'billing', 'chain']) assert.ok(lines.some((l) => new RegExp(`^  ${name}\\s+ok\\s+`).test(l)), `a line for ${name}:\n${r.stdout}`);
        assert.match(r.stdout, /\d[\d.]* shreds\/s/);
        assert.match(r.stdout, /route rpc-0 [\d.]+ landed\/s/);
        assert.doesNotMatch(r.stdout, /:\/\//, 'no URL');
        assert.ok(apiKey.length > 0 && !r.stdout.includes(apiKey), 'no API key');
      });

      it('--json: the figures move with the demo traffic between two runs', async () => {
        const one = await runCliDone(['status', '--endpoints', endpointsFile, '--interval', '1', '--json'], 60_000);
        const two = await runCliDone(['status', '--metrics', metricsAt, '--interval', '1', '--json'], 60_000);
        assert.equal(one.code, 0, one.stderr);
        assert.equal(two.code, 0, two.stderr);
        const a = JSON.parse(one.stdout) as Report;
        const b = JSON.parse(two.stdout) as Report;
        assert.equal(a.target, metricsAt);
        assert.equal(a.healthy, true);
        for (const r of [a, b]) {
          assert.ok(component(r, 'ingest').values.shredsPerSec! > 0, 'shreds arrive');
          assert.ok(component(r, 'ingest').values.transactionsPerSec! > 0, 'transactions decode');
          assert.ok(component(r, 'submit').values.acceptedPerSec! > 0, 'demo submissions are accepted');
          assert.ok(component(r, 'usage').values.producedPerSec! > 0, 'usage events are produced');
          assert.equal(component(r, 'rpc').values.upstreamsHealthy, 1);
        }
        assert.ok(component(b, 'chain').values.slot! > component(a, 'chain').values.slot!, 'the chain slot moved on between the runs');
      });

      it('--watch redraws with fresh rates until stopped', async () => {
        const w = runCli(['status', '--endpoints', endpointsFile, '--interval', '0.5', '--watch', '--json']);
        try {
          await w.waitFor(/("slot":\d+.*\n.*){3}/, 30_000, 'stdout');
        } finally {
          await w.stop('SIGINT');
        }
        const reports = w.stdout().trimEnd().split('\n').map((l) => JSON.parse(l) as Report);
        assert.ok(reports.length >= 3);
        const slots = reports.map((r) => component(r, 'chain').values.slot!);
        assert.ok(slots[slots.length - 1]! > slots[0]!, `slots ${slots.join(', ')}`);
      });

      it('nothing answering: one line, exit 1', async () => {
        const port = await freePort();
        const r = await runCliDone(['status', '--metrics', `127.0.0.1:${port}`], 30_000);
        assert.equal(r.code, 1);
        assert.equal(r.stdout, '');
        assert.equal(r.stderr, `meridian status: nothing answers at the metrics endpoint 127.0.0.1:${port} (ECONNREFUSED): is \`meridian start\` running?\n`);
        const none = await runCliDone(['status', '--endpoints', path.join(tmp, 'no-such-endpoints.json')], 30_000);
        assert.equal(none.code, 1);
        assert.match(none.stderr, /^meridian status: no running service found: cannot read .*no-such-endpoints\.json; start one with `npm start`, or pass --metrics HOST:PORT or --endpoints FILE\n$/);
      });
    });
  });
});

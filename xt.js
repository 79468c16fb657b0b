const crypto = require('crypto');
const { EmbeddedBus } = require('./dist/bus/embedded');
const { TOPIC, defaultTopicSpecs } = require('./dist/bus/topics');
const { EventProducer } = require('./dist/bus/event-producer');
const { encodeTraceEvent } = require('./dist/bus/topics/submit-traces');
const { TraceStore } = require('./dist/gateways/submit/trace-store');
const { TraceMetrics } = require('./dist/gateways/submit/trace-metrics');
const { SubmitMetrics } = require('./dist/gateways/submit/metrics');
const { KeySummaries } = require('./dist/gateways/submit/key-summary');
const { Registry } = require('./dist/infra/base/metrics');
const { createLogger } = require('./dist/infra/base/log');
(async () => {
  const bus = new EmbeddedBus({ topicLimits: { [TOPIC.submitTraces]: { maxMessagesPerPartition: 20000 } } });
  await bus.createTopics(defaultTopicSpecs().filter((t) => t.name === TOPIC.submitTraces));
  const reg = new Registry();
  const producer = new EventProducer(bus, { topic: TOPIC.submitTraces, encode: encodeTraceEvent, metricPrefix: 'x', registry: reg, log: createLogger({ level: 'warn' }), maxBuffered: 20000 });
  let store;
  const metrics = new TraceMetrics(reg, () => store.size);
  store = new TraceStore({ holdMs: 150000, maxTraces: 100000, sink: producer, metrics, submitMetrics: new SubmitMetrics(reg), summaries: new KeySummaries() });
  const sigs = Array.from({ length: 400000 }, () => crypto.randomBytes(64));
  const bh = crypto.randomBytes(32);
  const mode = process.argv[2] || 'full';
  let n = 0;
  const run = async (count) => {
    const c0 = process.cpuUsage();
    for (let i = 0; i < count; i++, n++) {
      const sig = sigs[n % sigs.length];
      const key = sig.toString('latin1');
      if (mode === 'none') continue;
      const t = store.accept(key, sig, { transport: 'binary', rental: 'bench', apiKey: 'k', blockhash: bh, forwarded: false });
      t.report('rpc-0', { ok: true, ms: 0.5 });
      if (i % 1000 === 999) await producer.flush();
    }
    await producer.flush();
    const c = process.cpuUsage(c0);
    return (c.user + c.system) / count;
  };
  await run(50000);
  const r = [];
  for (let k = 0; k < 6; k++) r.push((await run(50000)).toFixed(2));
  console.log(mode, 'µs per tx', r.join(' '));
  await producer.close();
})();

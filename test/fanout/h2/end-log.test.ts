import assert from 'node:assert/strict';
import { H2Error } from '../../../fanout/h2/frame';
import { fanoutMetrics } from '../../../fanout/metrics';
import { connectionEndLogger } from '../../../fanout/transport/h2';
import { quietLog } from '../../support/log-capture';

// The stream endpoint's account of connections the own HTTP/2 server ended (fanout/transport/h2.ts): every one
// counted by GOAWAY code and, for a budget, by what spent it; one warning line each with the peer's address,
// at most 20 a second, the ones left out counted on the next line.

describe('fanout/h2 ended connections: metric and log line', () => {
  it('counts every end, logs one line each (peer, code, reason, flood, bytes read) up to 20 a second, then the count left out', () => {
    const { log, lines } = quietLog('info');
    let t = 1_000_000;
    const onEnd = connectionEndLogger(log, () => t);
    const calm = fanoutMetrics.connectionError('ENHANCE_YOUR_CALM');
    const resets = fanoutMetrics.floodClose('client_reset');
    const [calm0, resets0] = [calm.value, resets.value];
    for (let i = 0; i < 25; i++) onEnd({ code: H2Error.ENHANCE_YOUR_CALM, reason: 'too many streams reset or refused', flood: 'client_reset', peer: `127.0.0.1:${40000 + i}`, bytesRead: 81_000, ageMs: 700 });
    assert.equal(calm.value - calm0, 25);
    assert.equal(resets.value - resets0, 25);
    assert.equal(lines.length, 20, 'at most 20 lines in a second');
    const first = JSON.parse(lines[0]!) as Record<string, unknown>;
    assert.deepEqual([first.msg, first.peer, first.code, first.reason, first.flood, first.bytesRead], ['stream connection closed by the server', '127.0.0.1:40000', 'ENHANCE_YOUR_CALM', 'too many streams reset or refused', 'client_reset', 81_000]);
    t += 1000;
    onEnd({ code: H2Error.PROTOCOL_ERROR, reason: 'bad connection preface', flood: undefined, peer: '[::1]:5', bytesRead: 24, ageMs: 1 });
    const next = JSON.parse(lines[20]!) as Record<string, unknown>;
    assert.deepEqual([next.code, next.flood, next.suppressed], ['PROTOCOL_ERROR', undefined, 5]);
  });
});

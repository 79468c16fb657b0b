import assert from 'node:assert/strict';
import { QUIC_STATUS, REJECT_REASONS, REJECTIONS, rejectionMessage } from '../../../gateways/submit/rejections';

describe('submit rejection table', () => {
  it('gives the contract answers to the rows the contract names', () => {
    assert.deepEqual(REJECTIONS.unauthorized.jsonrpc, { code: -32000, message: 'unauthorized' });
    assert.equal(REJECTIONS.unauthorized.jsonrpcHttp, 401);
    assert.deepEqual(REJECTIONS.rate_limited.jsonrpc, { code: -32001, message: 'rate limit exceeded' });
    assert.equal(REJECTIONS.rate_limited.jsonrpcHttp, 429);
    assert.equal(REJECTIONS.preflight_failed.jsonrpc.code, -32002);
    assert.equal(rejectionMessage('preflight_failed', 'Blockhash not found'), 'Transaction simulation failed: Blockhash not found');
    assert.deepEqual(REJECTIONS.preflight_upstream_error.jsonrpc, { code: -32603, message: 'preflight check failed: RPC node returned an error' });
    assert.deepEqual(REJECTIONS.preflight_timeout.jsonrpc, { code: -32603, message: 'preflight check timed out' });
    assert.deepEqual(REJECTIONS.too_large.http, { status: 413, text: 'decoded transaction too large' });
  });

  it('only unauthorized and rate limited change the HTTP status of a JSON-RPC answer', () => {
    const non200 = REJECT_REASONS.filter((r) => REJECTIONS[r].jsonrpcHttp !== 200);
    assert.deepEqual(non200, ['unauthorized', 'rate_limited']);
  });

  it('maps to the QUIC status bytes of compat.md', () => {
    assert.deepEqual(
      [REJECTIONS.rate_limited.quic, REJECTIONS.unsigned.quic, REJECTIONS.invalid_signature.quic, REJECTIONS.missing_tip.quic, REJECTIONS.tip_too_small.quic,
        REJECTIONS.cannot_deserialize.quic, REJECTIONS.too_large.quic, REJECTIONS.forward_failed.quic, REJECTIONS.signature_count_mismatch.quic],
      [0x01, 0x02, 0x02, 0x03, 0x03, 0x04, 0x05, 0x06, 0x07],
    );
    assert.equal(QUIC_STATUS.accepted, 0x00);
    for (const r of REJECT_REASONS) assert.ok(REJECTIONS[r].quic >= 0x01 && REJECTIONS[r].quic <= 0x07, r);
  });

  it('every rejection on /binary and /plaintext is a 4xx or 5xx with text', () => {
    assert.equal(REJECT_REASONS.length, 14);
    for (const r of REJECT_REASONS) {
      assert.ok(REJECTIONS[r].http.status >= 400, r);
      assert.ok(REJECTIONS[r].http.text.length > 0, r);
    }
  });
});

describe('submit quicStatus', () => {
  it('0x00 for an accepted outcome, the table byte otherwise', async () => {
    const { quicStatus } = await import('../../../gateways/submit/rejections');
    assert.equal(quicStatus({ ok: true }), 0x00);
    assert.equal(quicStatus({ ok: false, reason: 'missing_tip' }), 0x03);
    assert.equal(quicStatus({ ok: false, reason: 'signature_count_mismatch' }), 0x07);
  });
});

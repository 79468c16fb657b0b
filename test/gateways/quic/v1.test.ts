import assert from 'node:assert/strict';
import { QUIC_STATUS } from '../../../gateways/submit/rejections';
import { ensureTerminatorBinary, PROBE_BIN, TERMINATOR_BIN } from '../../../gateways/submit/quic/terminator-build';
import { waitFor } from '../../support/wait';
import { v1TipTx } from '../submit/v1-support';
import { startUpstream, type Upstream } from '../submit/upstream';
import { startQuicHarness, type QuicHarness } from './harness';
import { hex, Probe } from './probe';

// Transaction v1 over QUIC: the published SDK (falcon-client, through the probe) sends a v1 transaction and gets
// Ok; a stream with a wrong v1 signature or no tip gets the rejection table's status byte.

describe('submission over QUIC: transaction v1', function () {
  let up: Upstream;
  let h: QuicHarness;
  let sdk: Probe;
  let raw: Probe;

  before(async function () {
    this.timeout(30 * 60_000); // a fresh machine builds the terminator and the SDK client with cargo first
    await ensureTerminatorBinary(TERMINATOR_BIN);
    await ensureTerminatorBinary(PROBE_BIN);
    up = await startUpstream();
    h = await startQuicHarness({ upstreams: [up.url] });
    sdk = await Probe.start();
    raw = await Probe.start();
    assert.equal(await sdk.ok(`sdk connect ${h.addr} ${h.key}`), 'connected');
    assert.equal(await raw.ok(`raw connect ${h.addr} ${h.key}`), 'connected');
  });
  after(async () => {
    await sdk?.close();
    await raw?.close();
    await h?.close();
    await up?.close();
  });

  const st = (s: number): string => `01${s.toString(16).padStart(2, '0')}`;

  it('the SDK sends a v1 transaction and gets Ok; it is forwarded; wrong signature and missing tip get their status bytes', async () => {
    const tx = v1TipTx();
    assert.equal(await sdk.ok(`sdk send ${hex(tx)}`), 'sent');
    await waitFor(() => up.sends.some((s) => s.tx.equals(tx)), 5000, 'the forward');
    assert.equal(await raw.ok(`raw stream ${hex(v1TipTx())}`), st(QUIC_STATUS.accepted));
    assert.equal(await raw.ok(`raw stream ${hex(v1TipTx({ breakSig: true }))}`), st(QUIC_STATUS.unsigned));
    assert.equal(await raw.ok(`raw stream ${hex(v1TipTx({ tip: null }))}`), st(QUIC_STATUS.missingTip));
  });
});

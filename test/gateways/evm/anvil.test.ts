import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { waitFor } from '../../support/wait';
import { createPublicClient, createWalletClient, http, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { startAnvil } from '../../../infra/local/anvil/anvil';
import { DEV_KEY_0, PING_TOPIC, pingContractCode } from './support';

// infra/local/anvil on its own: a real node per chain id, stop and start again on the same port, no process left
// behind; and the hand-assembled test contract really emits its log (checked against anvil directly, so the
// gateway tests can rely on it).

/** Processes in a process group (anvil and its sh wrapper). */
function groupMembers(pgid: number): string[] {
  const out = execFileSync('ps', ['-eo', 'pgid=,args='], { encoding: 'utf8' });
  return out.split('\n').map((l) => l.trim()).filter((l) => l.split(/\s+/)[0] === String(pgid));
}

describe('infra/local/anvil', () => {
  it('starts per chain id on a port of its choosing, stops, and starts again on the same port', async () => {
    const a = await startAnvil({ chainId: 137 });
    assert.ok(a.port > 0);
    const client = createPublicClient({ transport: http(a.httpUrl) });
    assert.equal(await client.getChainId(), 137);
    const members = groupMembers(a.processGroup);
    assert.equal(members.length, 3, 'the sh wrapper, its lifeline watcher and anvil');
    assert.ok(members.some((l) => l.includes('--chain-id 137')));
    await a.stop();
    assert.deepEqual(groupMembers(a.processGroup), [], 'nothing of it is left after stop()');
    await assert.rejects(client.getChainId());

    const again = await startAnvil({ chainId: 137, port: a.port });
    try {
      assert.equal(again.port, a.port);
      assert.equal(await client.getChainId(), 137);
    } finally {
      await again.stop();
    }
  });

  it('leaves no anvil behind when the process that started it is killed with SIGKILL', async () => {
    // The module this file imports (compiled under dist/, or the TypeScript source in ts-node dev runs), for the
    // child to require: resolved like the import, so it follows the module wherever it moves.
    const module = require.resolve('../../../infra/local/anvil/anvil');
    const parent = spawn(process.execPath, ['-e', `require(${JSON.stringify(module)}).startAnvil({ chainId: 56 }).then((a) => { console.log(a.processGroup); setInterval(() => {}, 1000); })`], { stdio: ['ignore', 'pipe', 'inherit'] });
    const pgid = await new Promise<number>((resolve, reject) => {
      parent.stdout.once('data', (d: Buffer) => resolve(Number(d.toString().trim())));
      parent.once('exit', () => reject(new Error('parent exited early')));
    });
    assert.equal(groupMembers(pgid).length, 3);
    parent.kill('SIGKILL');
    await waitFor(() => groupMembers(pgid).length === 0, 10_000, 'anvil to follow its parent');
  });

  it('the test contract deployed from hand-written bytecode emits LOG1(Ping topic, calldata)', async () => {
    const a = await startAnvil({ chainId: 56 });
    try {
      const account = privateKeyToAccount(DEV_KEY_0);
      const wallet = createWalletClient({ account, transport: http(a.httpUrl) });
      const client = createPublicClient({ transport: http(a.httpUrl) });
      const deployHash = await wallet.deployContract({ abi: [], bytecode: pingContractCode(), chain: null });
      const deployed = await client.waitForTransactionReceipt({ hash: deployHash, pollingInterval: 50 });
      assert.equal(deployed.status, 'success');
      const address = deployed.contractAddress!;
      const data: Hex = '0xdeadbeef';
      const hash = await wallet.sendTransaction({ to: address, data, chain: null });
      const receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: 50 });
      assert.equal(receipt.logs.length, 1);
      assert.equal(receipt.logs[0]!.address.toLowerCase(), address.toLowerCase());
      assert.deepEqual(receipt.logs[0]!.topics, [PING_TOPIC]);
      assert.equal(receipt.logs[0]!.data, data);
    } finally {
      await a.stop();
    }
  });
});

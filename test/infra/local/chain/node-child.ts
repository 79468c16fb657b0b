import { startLocalChain } from '../../../../infra/local/chain';
import { quietLog } from '../../../support/log-capture';

// A local chain node in its own process (benchmarks: the load generator must not share the node's event loop).
// IPC: sends {ready: {httpUrl, payer}}; answers "cpu" with {cpu: process.cpuUsage()}; "close" stops and exits.

async function main(): Promise<void> {
  const ledgerTransactions = Number(process.env.LOCALCHAIN_LEDGER_TXS ?? 20_000);
  const node = await startLocalChain({ host: '127.0.0.1', port: 0, log: quietLog().log, ledgerTransactions });
  process.on('message', (m: unknown) => {
    if (m === 'cpu') process.send!({ cpu: process.cpuUsage() });
    if (m === 'close') void node.close().then(() => process.exit(0));
  });
  // The parent going away ends the node too.
  process.on('disconnect', () => void node.close().then(() => process.exit(0)));
  process.send!({ ready: { httpUrl: node.httpUrl, payer: [...node.payer] } });
}

void main();

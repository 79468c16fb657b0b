// What the chain gateway knows about methods (compat.md, Chain JSON-RPC). Every method is proxied, known or
// not; these tables only price them. The weights are defaults for configuration (gateways.rpc.weights
// overrides or adds entries); the contract fixes only getTransaction = 10.

export const DEFAULT_WEIGHT = 1;

export const DEFAULT_WEIGHTS: Readonly<Record<string, number>> = {
  getAccountInfo: 2,
  getTokenAccountBalance: 2,
  getMultipleAccounts: 5,
  getTransaction: 10,
  getBlock: 10,
  getBlocks: 10,
  getBlocksWithLimit: 10,
  getBlockTime: 10,
  getSignaturesForAddress: 10,
  getInflationReward: 10,
  getTokenAccountsByOwner: 10,
  getTokenAccountsByDelegate: 10,
  getTokenLargestAccounts: 10,
  getProgramAccounts: 30,
  getLargestAccounts: 30,
};

/** Methods that take a scan-concurrency slot. */
export const DEFAULT_SCAN_METHODS: readonly string[] = [
  'getProgramAccounts',
  'getTokenAccountsByOwner',
  'getTokenAccountsByDelegate',
  'getTokenLargestAccounts',
  'getLargestAccounts',
];

/** Methods that draw on TPS instead of RPS. */
export const DEFAULT_TPS_METHODS: readonly string[] = ['sendTransaction'];

/** Methods never retried, hedged or sent twice (each copy could land or airdrop again). */
export const DEFAULT_NEVER_RETRY: readonly string[] = ['sendTransaction', 'requestAirdrop'];

/** `<kind>Subscribe` / `<kind>Unsubscribe` (WebSocket): weight 1 whatever the table says. */
export function isSubscription(method: string): boolean {
  return method.endsWith('Subscribe') || method.endsWith('Unsubscribe');
}

// The local chain makes Alpenglow blocks by default; the tower-era format (64 ticks, no markers: what old captures
// hold) is one setting away. The end-to-end tests that go through the chain run on both: every case on Alpenglow,
// and the embedded-bus case once more on tower-era blocks (the block format is ingest's and the chain's business;
// a Kafka pass of each would double those suites' time without another path through the code).

export type ChainBlockFormat = 'alpenglow' | 'tower';

export function blockFormatsFor(busKind: 'embedded' | 'kafka'): ChainBlockFormat[] {
  return busKind === 'embedded' ? ['alpenglow', 'tower'] : ['alpenglow'];
}

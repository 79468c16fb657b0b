// A capture FILE that cannot be read (truncated, wrong magic, unsupported link type) is an operator error,
// reported once with where it went wrong; bad packets inside a readable file are not errors (they are
// skipped and counted by the reader, or dropped and counted by the shred parser).

export class CaptureError extends Error {
  constructor(readonly format: string, readonly offset: number, detail: string) {
    super(`${format} capture: ${detail} at byte ${offset}`);
    this.name = 'CaptureError';
  }
}

/** Content that is none of the capture formats (detection by content found no magic and no u64lp framing). */
export class NotACaptureError extends Error {
  constructor() {
    super('not a pcap, ar or u64lp capture');
    this.name = 'NotACaptureError';
  }
}

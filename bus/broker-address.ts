import { registerSecret } from '../infra/base/log';
import { OperatorError } from '../infra/base/operator-error';

// Kafka names its brokers as "host:port" (and a host alone when it does not resolve: "getaddrinfo ENOTFOUND
// kafka-1"). The logging rule treats them like URLs, so every text kafkajs hands us is masked before it reaches a
// log line or leaves bus/: the configured brokers by name (host:port, and the host alone when it is a name), and
// any other "host:port" the cluster advertises by shape.
//
// By shape, without touching stack frames: a frame's "file.js:210:23" or "node:events:519:28" is a name, a line
// and a column, so a candidate that follows "/", "\", ":" or "(" (a path, a scheme) or that is followed by ":<digit>"
// (a column) is not an address. The earlier pattern (/\b[\w.-]+:\d{2,5}\b/) turned every frame into "[broker]" and
// let a broker's host name through.

/** host:port (IPv4, a name) or [IPv6]:port, standing alone as a word. */
const ADDRESS_RE = /(?<![\w.\-/\\:(])(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[\w.-]*[A-Za-z0-9])?):\d{1,5}(?![\d:])/g;
const IPV4_RE = /^\d{1,3}(?:\.\d{1,3}){3}$/;

const MASK = '[broker]';

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

/** The host of "host:port" / "[v6]:port" / "host". */
function hostOf(address: string): string {
  const m = /^\[(.*)\](?::\d+)?$/.exec(address) ?? /^(.*?)(?::\d+)?$/.exec(address);
  return m?.[1] ?? address;
}

/** A host that is a name (not an IP literal): it may appear alone in a resolver's error. */
function isName(host: string): boolean {
  return !IPV4_RE.test(host) && !host.includes(':') && host.length >= 4 && host !== 'localhost';
}

export type Masker = (text: string) => string;

/**
 * A masker for the given bootstrap brokers. They are registered with the process log scrubber as well, so a line
 * that carries one by another road (a field, a message built elsewhere) is masked too.
 */
export function brokerMasker(brokers: readonly string[]): Masker {
  const names = new Set<string>();
  for (const b of brokers) {
    names.add(b);
    const h = hostOf(b);
    if (isName(h)) names.add(h);
  }
  registerSecret(...names);
  const known = names.size === 0 ? null : new RegExp([...names].sort((a, b) => b.length - a.length).map(escapeRe).join('|'), 'g');
  return (text) => {
    const out = text.replace(ADDRESS_RE, MASK);
    return known === null ? out : out.replace(known, MASK);
  };
}

/** Masks an error's message and stack, and its causes', in place; the same error comes back. */
export function maskError(e: unknown, mask: Masker): Error {
  const err = e instanceof Error ? e : new Error(String(e));
  for (let c: unknown = err, depth = 0; c instanceof Error && depth < 5; c = (c as { cause?: unknown }).cause, depth++) {
    c.message = mask(c.message);
    if (c.stack !== undefined) c.stack = mask(c.stack);
    const withBroker = c as { broker?: unknown };
    if (typeof withBroker.broker === 'string') withBroker.broker = MASK;
  }
  return err;
}

/** Errno codes of a connection that never opened, in words. */
const WHY: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'host name does not resolve',
  EAI_AGAIN: 'host name does not resolve (temporary DNS failure)',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ECONNRESET: 'connection reset',
};

/**
 * No broker answered: the operator's setting to check, in one line (the CLI prints it without a stack). The
 * addresses are named, once: this line goes to the terminal, and were it logged the scrubber masks them
 * (brokerMasker registered them).
 */
export class KafkaUnreachable extends OperatorError {
  constructor(
    readonly brokers: readonly string[],
    /** Where the brokers were set, in the operator's words ('bus.brokers (MERIDIAN__BUS__BROKERS or KAFKA_BROKERS)'). */
    readonly setting: string,
    readonly why: string,
  ) {
    super(`cannot reach Kafka at ${brokers.join(', ')}: ${why}; check that a broker runs there and that ${setting} names it`);
    this.name = 'KafkaUnreachable';
  }
}

/**
 * A KafkaUnreachable when `e` (a kafkajs error, or its causes) is a connection that never opened; null when it is
 * anything else. kafkajs wraps the connect failure: NonRetriable / NumberOfRetriesExceeded → KafkaJSConnectionError.
 */
export function asUnreachable(e: unknown, brokers: readonly string[], setting: string): KafkaUnreachable | null {
  for (let c: unknown = e, depth = 0; c instanceof Error && depth < 5; c = (c as { cause?: unknown }).cause, depth++) {
    if (c.name !== 'KafkaJSConnectionError') continue;
    // Only a connection that never opened: one closed mid-request is an outage the caller retries, not a setting.
    const code = (c as { code?: unknown }).code;
    if (typeof code === 'string' && Object.hasOwn(WHY, code)) return new KafkaUnreachable(brokers, setting, `${WHY[code]} (${code})`);
    if (/^Connection timeout/.test(c.message)) return new KafkaUnreachable(brokers, setting, 'connection timed out');
  }
  return null;
}

/** The setting the CLI commands that talk to Kafka read their brokers from. */
export const CLI_BROKERS_SETTING = '--brokers (or KAFKA_BROKERS)';

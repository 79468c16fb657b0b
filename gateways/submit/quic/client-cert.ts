import { X509Certificate } from 'node:crypto';

// The API key of a QUIC connection: the subject CN of the client's self-signed certificate (the SDK writes
// the UUID there in its lowercase hyphenated text form). The terminator has already checked possession of
// the certificate's Ed25519 key during the handshake; the CN is all that is read here.

/** The subject CN, or null if the DER does not parse or has no single CN. */
export function subjectCommonName(der: Buffer): string | null {
  if (der.length === 0) return null;
  let subject: string;
  try {
    subject = new X509Certificate(der).subject;
  } catch {
    return null;
  }
  const cns = subject.split('\n').filter((l) => l.startsWith('CN='));
  return cns.length === 1 ? cns[0]!.slice(3) : null;
}

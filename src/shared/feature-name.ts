/**
 * The feature a key from an end user's request is checked as: a framework's key (a header,
 * a body field, an address) or the values of an Envoy descriptor. memgate refuses some
 * strings as features: empty, over 1024 UTF-8 bytes, or not well-formed Unicode. Sent as
 * they are, such keys made every check fail: a 500 for each request, or no limit at all
 * under express-rate-limit's passOnStoreError or @fastify/rate-limit's skipOnError. So a key
 * memgate would refuse is checked as its SHA-256 instead: each such key is still limited,
 * by itself.
 */
import { createHash } from 'node:crypto';

/** Features longer than this many UTF-8 bytes are refused. */
export const MAX_FEATURE_BYTES = 1024;

export function featureName(key: string): string {
  if (key !== '' && key.isWellFormed() && Buffer.byteLength(key, 'utf8') <= MAX_FEATURE_BYTES) return key;
  // UTF-16 code units, so two ill-formed keys never hash alike.
  return `sha256:${createHash('sha256').update(key, 'utf16le').digest('hex')}`;
}

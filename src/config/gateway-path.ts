/**
 * The path of a request a gateway guards, normalised so every spelling of one resource
 * names one route (RFC 3986 section 6): query and fragment dropped, percent-encoded
 * unreserved characters decoded, other escapes upper-cased, characters a URI cannot hold
 * percent-encoded, dot segments removed, repeated slashes merged. An absolute URI
 * (`http://host/login`) gives its path; a path without its leading slash gets one.
 *
 * Upstream servers disagree on a few spellings, so a path has two readings:
 * - `rfc3986`: %2F, %5C, a raw backslash and `;` are ordinary characters, and dot segments
 *   are removed before slashes merge (`/x//../a` is `/x/a`).
 * - `lenient`: %2F, %5C and `\` separate segments, `;parameters` are cut from each segment
 *   (servlet containers), and slashes merge first (`/x//../a` is `/a`), as nginx reads it.
 * The gateway refuses a path whose readings fall on different routes.
 *
 * `uri` holds one byte per character (Node's HTTP parser gives URLs and header values so);
 * a character above U+00FF is taken as its UTF-8 bytes. Returns undefined when a `%` is not
 * followed by two hex digits.
 */
export type PathReading = 'rfc3986' | 'lenient';

export const PATH_READINGS: readonly PathReading[] = ['rfc3986', 'lenient'];

const UNRESERVED = /^[A-Za-z0-9\-._~]$/;
/** Characters a path may hold unencoded: unreserved, sub-delims, ":", "@", "/" and "%". */
const PATH_CHAR = /^[A-Za-z0-9\-._~!$&'()*+,;=:@/%]$/;
const ABSOLUTE = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/]*/;

export function normalisePath(uri: string, reading: PathReading): string | undefined {
  const lenient = reading === 'lenient';
  let path = lenient ? uri.replaceAll('\\', '/') : uri;
  path = path.replace(/[?#].*$/s, '').replace(ABSOLUTE, '');
  const decoded = decodeUnreserved(path.startsWith('/') ? path : `/${path}`, lenient);
  if (decoded === undefined) return undefined;
  let segments = decoded.split('/').slice(1);
  if (lenient) segments = mergeSlashes(segments.map((segment) => segment.replace(/;.*$/s, '')));
  segments = removeDotSegments(segments);
  return `/${(lenient ? segments : mergeSlashes(segments)).join('/')}`;
}

/** Decodes %XX of unreserved characters (and, leniently, of "/" and "\\"); encodes what a URI cannot hold. */
function decodeUnreserved(path: string, lenient: boolean): string | undefined {
  let out = '';
  for (let i = 0; i < path.length; ) {
    const codePoint = path.codePointAt(i) ?? 0;
    const char = String.fromCodePoint(codePoint);
    i += char.length;
    if (char !== '%') {
      out += PATH_CHAR.test(char) ? char : percentEncode(codePoint);
      continue;
    }
    const hex = path.slice(i, i + 2);
    if (!/^[0-9A-Fa-f]{2}$/.test(hex)) return undefined;
    i += 2;
    const byte = String.fromCharCode(parseInt(hex, 16));
    out += UNRESERVED.test(byte) ? byte : lenient && (byte === '/' || byte === '\\') ? '/' : `%${hex.toUpperCase()}`;
  }
  return out;
}

/** A byte (U+0000 to U+00FF) as one escape; a higher code point as the escapes of its UTF-8 bytes. */
function percentEncode(codePoint: number): string {
  const bytes = codePoint <= 0xff ? [codePoint] : [...Buffer.from(String.fromCodePoint(codePoint), 'utf8')];
  return bytes.map((byte) => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`).join('');
}

/** RFC 3986 section 5.2.4 on a path's segments: "." goes, ".." takes the previous segment with it. */
function removeDotSegments(segments: readonly string[]): string[] {
  const out: string[] = [];
  segments.forEach((segment, index) => {
    if (segment !== '.' && segment !== '..') return void out.push(segment);
    if (segment === '..') out.pop();
    // "/a/." and "/a/b/.." end in a slash.
    if (index === segments.length - 1) out.push('');
  });
  return out;
}

/** Drops empty segments (repeated slashes), keeping a trailing slash. */
function mergeSlashes(segments: readonly string[]): string[] {
  return segments.filter((segment, index) => segment !== '' || index === segments.length - 1);
}

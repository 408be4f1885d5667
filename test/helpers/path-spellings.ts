// Spellings of one path that servers serve as the same resource, for property tests of
// the gateway's path normalisation (unit, and through real nginx).
import fc from 'fast-check';

const dot = fc.constantFrom('.', '%2e', '%2E');
const dotDot = fc.constantFrom('..', '.%2e', '%2E.', '%2e%2E');
const separator = fc.constantFrom('/', '/', '//', '///');

/** A segment with some characters percent-encoded (either hex case) and, if asked, some letters' case swapped. */
function spell(segment: string, changeCase: boolean): fc.Arbitrary<string> {
  const flags = fc.array(fc.tuple(fc.boolean(), fc.boolean(), fc.boolean()), {
    minLength: segment.length,
    maxLength: segment.length,
  });
  // Segments are ASCII, one character per UTF-16 unit.
  return flags.map((each) =>
    each
      .map(([encode, upperHex, swap], i) => {
        const char = segment.charAt(i);
        const cased =
          changeCase && swap ? (char === char.toLowerCase() ? char.toUpperCase() : char.toLowerCase()) : char;
        if (!encode) return cased;
        const hex = cased.charCodeAt(0).toString(16);
        return `%${upperHex ? hex.toUpperCase() : hex}`;
      })
      .join(''),
  );
}

/** Before a segment: "." segments and detours ("x/..") that every reading removes. */
const junk = (changeCase: boolean) =>
  fc.array(
    fc.oneof(
      dot,
      fc
        .tuple(
          fc.stringMatching(/^[a-z0-9]{1,5}$/).chain((name) => spell(name, changeCase)),
          dotDot,
        )
        .map(([name, up]) => `${name}/${up}`),
    ),
    {
      maxLength: 2,
    },
  );

/**
 * Spellings of an absolute path of plain segments (letters, digits, "-", "_"): encoded
 * unreserved characters, dot segments, detours, repeated slashes (never right before ".."),
 * an absolute-form start, a query and a fragment. With `changeCase`, letters change case.
 */
export function spellingsOf(path: string, { changeCase = false } = {}): fc.Arbitrary<string> {
  const segments = path.split('/').slice(1);
  const tokens = fc.tuple(
    ...segments.map((segment) =>
      fc.tuple(junk(changeCase), spell(segment, changeCase)).map(([before, spelled]) => [...before, spelled]),
    ),
  );
  const joined = tokens.chain((groups) => {
    const flat = groups.flat();
    return fc
      .array(separator, { minLength: flat.length, maxLength: flat.length })
      .map((seps) => flat.map((token, i) => `${seps[i] ?? '/'}${token}`).join(''));
  });
  return fc
    .tuple(
      fc.constantFrom('', '', 'http://example.com', 'HTTPS://h:8443'),
      joined,
      fc.constantFrom('', '', '?', '?x=1', '?next=/x/../admin', '#top', '?a=b#c'),
    )
    .map(([start, body, end]) => `${start}${body}${end}`);
}

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { spellingsOf } from '../../test/helpers/path-spellings.js';
import { normalisePath, PATH_READINGS } from './gateway-path.js';

describe('normalisePath', () => {
  it.each([
    // RFC 3986 section 5.2.4 (dot segments) and 6.2.2 (case of escapes, unreserved characters)
    ['/a/b/c/./../../g', '/a/g', '/a/g'],
    ['mid/content=5/../6', '/mid/6', '/mid/6'],
    ['/a/./b/../b/%63/%7bfoo%7d', '/a/b/c/%7Bfoo%7D', '/a/b/c/%7Bfoo%7D'],
    ['/%7Esmith/', '/~smith/', '/~smith/'],
    ['/a%c2%b1b', '/a%C2%B1b', '/a%C2%B1b'],
    ['/a/b/.', '/a/b/', '/a/b/'],
    ['/a/b/..', '/a/', '/a/'],
    ['/..', '/', '/'],
    ['/../../login', '/login', '/login'],
    // RFC 3986 section 6.2.3: an absolute URI's path, an empty path is "/"
    ['http://example.com', '/', '/'],
    ['HTTP://example.com:/~smith/?q', '/~smith/', '/~smith/'],
    ['', '/', '/'],
    // query and fragment dropped, escaped ones kept as data
    ['/login?next=/admin', '/login', '/login'],
    ['/login#x?y', '/login', '/login'],
    ['/login%3Fx', '/login%3Fx', '/login%3Fx'],
    // repeated slashes merged; a trailing slash kept
    ['//login', '/login', '/login'],
    ['/a//b///', '/a/b/', '/a/b/'],
    // a relative reference is read against the root
    ['login', '/login', '/login'],
    ['*', '/*', '/*'],
    // encoded unreserved characters decoded, dot segments then removed
    ['/%6C%6f%67%69%6E', '/login', '/login'],
    ['/%2e/login', '/login', '/login'],
    ['/x/%2E%2e/login', '/login', '/login'],
    // what a URI cannot hold is percent-encoded: controls, spaces, quotes, non-ASCII bytes
    ['/a b"<>', '/a%20b%22%3C%3E', '/a%20b%22%3C%3E'],
    ['/\u0000\u007f', '/%00%7F', '/%00%7F'],
    ['/l\u00c3\u00b6gin', '/l%C3%B6gin', '/l%C3%B6gin'],
    ['/\u{1F600}', '/%F0%9F%98%80', '/%F0%9F%98%80'],
    // where servers disagree: encoded separators, backslashes, ;parameters, // before ..
    ['/x%2F..%2Flogin', '/x%2F..%2Flogin', '/login'],
    ['/x%5c..%5Clogin', '/x%5C..%5Clogin', '/login'],
    ['/x\\..\\login', '/x%5C..%5Clogin', '/login'],
    ['/..;/login', '/..;/login', '/login'],
    ['/login;jsessionid=1/x', '/login;jsessionid=1/x', '/login/x'],
    ['/x//../login', '/x/login', '/login'],
  ])('%j reads as %j (rfc3986) and %j (lenient)', (uri, rfc3986, lenient) => {
    expect(normalisePath(uri, 'rfc3986')).toBe(rfc3986);
    expect(normalisePath(uri, 'lenient')).toBe(lenient);
  });

  it.each(['/%', '/a%2', '/%G0', '/%%41', '/login%zz?ok=%'])('refuses %j: a "%" must start an escape', (uri) => {
    for (const reading of PATH_READINGS) expect(normalisePath(uri, reading)).toBeUndefined();
  });

  const anyUri = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 40 }),
    fc.string({ unit: fc.constantFrom('/', '.', '%', '2', 'e', 'E', 'f', 'F', 'c', '5', ';', '\\', '?', '#', 'a', ':'), maxLength: 30 }),
  );

  it('is idempotent, and gives a path with nothing left to normalise', () => {
    fc.assert(
      fc.property(anyUri, fc.constantFrom(...PATH_READINGS), (uri, reading) => {
        const path = normalisePath(uri, reading);
        if (path === undefined) return;
        expect(normalisePath(path, reading)).toBe(path);
        expect(path).toMatch(/^\/[A-Za-z0-9\-._~!$&'()*+,;=:@/%]*$/);
        expect(path).not.toMatch(/\/\/|\/\.\.?(\/|$)|%(?![0-9A-F]{2})/);
        // An escape never stands for an unreserved character.
        for (const [, hex] of path.matchAll(/%([0-9A-F]{2})/g)) expect(String.fromCharCode(parseInt(hex ?? '', 16))).not.toMatch(/[A-Za-z0-9\-._~]/);
        if (reading === 'lenient') expect(path).not.toMatch(/;|%2F|%5C/);
      }),
      { numRuns: 3000 },
    );
  });

  it('reads every spelling of a path as that path, in both readings', () => {
    const spelt = fc.oneof(...['/login', '/api/v1/users', '/a-b/c_d/e'].map((path) => spellingsOf(path).map((spelling) => [path, spelling] as const)));
    fc.assert(
      fc.property(spelt, fc.constantFrom(...PATH_READINGS), ([path, spelling], reading) => {
        expect(normalisePath(spelling, reading)).toBe(path);
      }),
      { numRuns: 2000 },
    );
  });
});

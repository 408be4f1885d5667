import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { parseAccessLine, parseAccessLog, readAccessLog, type LoggedRequest } from './access-log.js';

describe('access log lines', () => {
  it('reads the Common and Combined formats: host, time in its zone, method and target', () => {
    expect(parseAccessLine('10.0.0.1 - bob [22/Nov/2026:12:00:00 +0130] "POST /api/x?y=1 HTTP/1.1" 201 -', 3)).toEqual({
      ms: Date.UTC(2026, 10, 22, 10, 30, 0),
      host: '10.0.0.1',
      method: 'POST',
      target: '/api/x?y=1',
      line: 3,
    });
    const combined =
      '2001:db8::7 - - [01/Aug/1995:00:00:01 -0400] "GET / HTTP/1.0" 200 1839 "http://ref/" "Mozilla/5.0 (X11)"';
    expect(parseAccessLine(combined)).toMatchObject({ host: '2001:db8::7', method: 'GET', target: '/' });
    // A proxy's absolute target is kept; /gate normalises it to its path.
    expect(parseAccessLine('h - - [01/Aug/1995:00:00:01 -0400] "GET http://x/login HTTP/1.0" 200 1')?.target).toBe(
      'http://x/login',
    );
  });

  it('keeps a request whose request line cannot be read, without a target', () => {
    const line = parseAccessLine('h - - [01/Aug/1995:00:00:01 -0400] "-" 400 0');
    expect(line).toMatchObject({ host: 'h' });
    expect(line?.target).toBeUndefined();
    expect(parseAccessLine('h - - [01/Aug/1995:00:00:01 -0400] "\\x16\\x03\\x01" 400 0')?.target).toBeUndefined();
  });

  it.each([
    ['no timestamp', 'host - - "GET /" 200 1'],
    ['a day that does not exist', 'host - - [31/Feb/1995:00:00:01 -0400] "GET /" 200 1'],
    ['garbage', '\u0000\u0001 binary'],
  ])('refuses %s', (_case, line) => {
    expect(parseAccessLine(line)).toBeUndefined();
  });

  it('sorts a log by time, equal times in the order of the file, and counts what it cannot read', () => {
    const log = parseAccessLog(
      [
        'b - - [01/Aug/1995:00:00:02 +0000] "GET /b HTTP/1.0" 200 1',
        'a - - [01/Aug/1995:00:00:01 +0000] "GET /a1 HTTP/1.0" 200 1',
        'not a line',
        'a - - [01/Aug/1995:00:00:01 +0000] "GET /a2 HTTP/1.0" 200 1',
        '',
      ].join('\n'),
    );
    expect(log.requests.map((r) => r.target)).toEqual(['/a1', '/a2', '/b']);
    expect([log.unparseable, log.firstUnparseable]).toEqual([1, 'not a line']);
  });
});

describe('an access log read as it streams', () => {
  const at = (second: number, host = 'h', target = '/') =>
    `${host} - - [01/Aug/1995:00:00:${String(second).padStart(2, '0')} +0000] "GET ${target} HTTP/1.0" 200 1`;

  /** `lines` read in chunks of `chunkBytes`: the requests in the order handed on, and the summary. */
  async function read(lines: readonly string[], chunkBytes: number, reorderMs = 10_000) {
    const bytes = Buffer.from(lines.join('\n'));
    const chunks: Buffer[] = [];
    for (let start = 0; start < bytes.length; start += chunkBytes)
      chunks.push(bytes.subarray(start, start + chunkBytes));
    const requests: LoggedRequest[] = [];
    const summary = await readAccessLog(Readable.from(chunks), {
      maxLineBytes: 100,
      reorderMs,
      reorderBytes: 1024 * 1024,
      onRequest: (request) => requests.push(request),
    });
    return { requests, summary };
  }

  it('hands on requests in time order and skips, counts and places what it cannot replay', async () => {
    const lines = [
      at(20, 'a'),
      at(18, 'b'), // within 10 s: put in its place
      'garbage',
      at(21, 'c', `/${'x'.repeat(100)}`), // too long
      at(35, 'd'), // releases what is more than 10 s behind it
      at(19, 'e'), // 16 s behind line 5, older than a line released: out of order
      '',
      'more garbage',
      at(36, 'f'),
    ];
    for (const chunkBytes of [1, 7, 64, 4096]) {
      const { requests, summary } = await read(lines, chunkBytes);
      expect(requests.map((r) => [r.host, r.line])).toEqual([
        ['b', 2],
        ['a', 1],
        ['d', 5],
        ['f', 9],
      ]);
      expect(summary).toEqual({
        requests: 4,
        firstMs: Date.UTC(1995, 7, 1, 0, 0, 18),
        lastMs: Date.UTC(1995, 7, 1, 0, 0, 36),
        skipped: {
          'not an access log line': { lines: 2, firstLine: 3, firstText: 'garbage' },
          'too long': { lines: 1, firstLine: 4 },
          'out of time order': { lines: 1, firstLine: 6 },
        },
      });
    }
  });

  it('reads a log of no request to an empty summary', async () => {
    expect((await read(['nothing here'], 4096)).summary).toEqual({
      requests: 0,
      skipped: { 'not an access log line': { lines: 1, firstLine: 1, firstText: 'nothing here' } },
    });
  });
});

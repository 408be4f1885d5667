import { describe, expect, it } from 'vitest';
import { parseAccessLine, parseAccessLog } from './access-log.js';

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

import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { sharedFile } from '../../test/helpers/shared-files.js';
import { parseClf, parseClfLine } from './clf.js';

describe('Common Log Format', () => {
  it('reads host and time, honouring the zone', () => {
    expect(
      parseClfLine(
        'in24.inetnebr.com - - [01/Aug/1995:00:00:01 -0400] "GET /shuttle/missions/sts-68/news/sts-68-mcc-05.txt HTTP/1.0" 200 1839',
      ),
    ).toEqual({
      feature: 'in24.inetnebr.com',
      ms: Date.UTC(1995, 7, 1, 4, 0, 1),
    });
    expect(parseClfLine('10.0.0.1 - bob [22/Nov/2026:12:00:00 +0130] "POST /x" 201 -')?.ms).toBe(
      Date.UTC(2026, 10, 22, 10, 30, 0),
    );
  });

  it.each([
    ['an empty host', ' - - [01/Aug/1995:00:00:01 -0400] "GET /" 200 1'],
    ['no timestamp', 'host - - "GET /" 200 1'],
    ['an unknown month', 'host - - [01/Foo/1995:00:00:01 -0400] "GET /" 200 1'],
    ['a day that does not exist', 'host - - [31/Feb/1995:00:00:01 -0400] "GET /" 200 1'],
    ['an hour out of range', 'host - - [01/Aug/1995:25:00:01 -0400] "GET /" 200 1'],
    ['garbage', '\u0000\u0001 binary'],
  ])('refuses %s', (_case, line) => {
    expect(parseClfLine(line)).toBeUndefined();
  });

  it('counts bad lines instead of failing, and sorts by time', () => {
    const log = parseClf(
      [
        'b - - [01/Aug/1995:00:00:05 +0000] "GET /" 200 1',
        'not a log line',
        '',
        'a - - [01/Aug/1995:00:00:01 +0000] "GET /" 200 1',
      ].join('\n'),
    );
    expect(log.requests.map((r) => r.feature)).toEqual(['a', 'b']);
    expect(log.unparseable).toBe(1);
    expect(log.firstUnparseable).toBe('not a log line');
  });

  it('reads every line of the NASA-HTTP slice in ../shared/traces', async (test) => {
    const log = parseClf(await readFile(sharedFile(test, 'traces/nasa-http-aug95-first-72min.log'), 'utf8'));
    expect(log.unparseable).toBe(0);
    expect(log.requests).toHaveLength(1880);
    expect(new Set(log.requests.map((r) => r.feature)).size).toBe(177);
    expect(log.requests.every((r) => r.ms % 1000 === 0)).toBe(true);
  });
});

import { describe, expect, it } from 'vitest';
import { parseServerList, ServerListError } from './memcached-servers.js';

describe('parseServerList', () => {
  it('reads host:port entries: names, IPv4, bracketed IPv6', () => {
    expect(parseServerList('cache-1:11211, 10.0.0.5:11212,[::1]:11213').map(({ host, port, label }) => ({ host, port, label }))).toEqual([
      { host: 'cache-1', port: 11211, label: 'cache-1:11211' },
      { host: '10.0.0.5', port: 11212, label: '10.0.0.5:11212' },
      { host: '::1', port: 11213, label: '[::1]:11213' },
    ]);
  });

  it('reads memcached:// URLs as their host:port, credentials and a trailing slash too', () => {
    expect(parseServerList('memcached://cache-1:11211, MEMCACHED://[::1]:1/,memcached://u:p@c:2')).toEqual([
      { host: 'cache-1', port: 11211, label: 'cache-1:11211' },
      { host: '::1', port: 1, label: '[::1]:1' },
      { host: 'c', port: 2, label: 'c:2', username: 'u', password: 'p' },
    ]);
    expect(() => parseServerList('memcached://c:2/db')).toThrow('has port "2/db"');
    expect(() => parseServerList('tcp://c:2')).toThrow('"tcp://…" is not a Memcached address: write host:port');
  });

  it('never repeats a password in its errors', () => {
    expect(() => parseServerList('alice:s3cret@bad host:1')).toThrow('Memcached server "bad host:1" is not host:port');
    expect(() => parseServerList('alice:s3cret@bad host:1')).not.toThrow(/s3cret/);
    expect(() => parseServerList('alice:s3cret@cache')).not.toThrow(/s3cret/);
  });

  it('names the entry and the problem apart, for MEMCACHED_SERVERS to say which it was', () => {
    const error = (() => {
      try {
        parseServerList('a:1,garbage');
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(ServerListError);
    expect(error).toMatchObject({ entry: '"garbage"', problem: expect.stringContaining('names no port') as string });
  });

  it('gives the environment’s SASL credentials to every server without its own', () => {
    const endpoints = parseServerList('a:1,alice:s3cret@b:2', { username: 'memgate', password: 'pw' });
    expect(endpoints.map(({ label, username, password }) => ({ label, username, password }))).toEqual([
      { label: 'a:1', username: 'memgate', password: 'pw' },
      { label: 'b:2', username: 'alice', password: 's3cret' },
    ]);
  });
});

import { describe, expect, it } from 'vitest';
import { CLIENT_DEFAULTS } from '../shared/defaults.js';
import { MemgateClientError } from './errors.js';
import { resolveOptions } from './options.js';

describe('createClient options', () => {
  it('fill in the defaults of config/defaults.ts', () => {
    const options = resolveOptions({ url: 'http://memgate:8080/base/' });
    expect(options).toMatchObject({
      timeoutMs: CLIENT_DEFAULTS.clientTimeoutMs,
      onError: 'allow',
      batchWindowMs: 0,
      maxBatchSize: 100,
      errorBackoffMs: 1000,
    });
    expect(options.url.pathname).toBe('/base/');
  });

  it.each([
    [
      { url: 'ftp://x' },
      /^memgate client: option url must be memgate's http:\/\/ or https:\/\/ URL \(got "ftp:\/\/x"\)$/,
    ],
    [{ url: 'not a url' }, /option url /],
    [{}, /option url /],
    [{ url: 'http://m', timeoutMs: 0 }, /^memgate client: option timeoutMs must be a whole number from 1 to/],
    [{ url: 'http://m', timeoutMs: 1.5 }, /option timeoutMs /],
    [{ url: 'http://m', onError: 'maybe' }, /^memgate client: option onError must be allow or deny \(got "maybe"\)$/],
    [{ url: 'http://m', batchWindowMs: 11 }, /option batchWindowMs must be a number of milliseconds from 0 to 10/],
    [{ url: 'http://m', batchWindowMs: -1 }, /option batchWindowMs /],
    [{ url: 'http://m', maxBatchSize: 101 }, /option maxBatchSize must be a whole number from 1 to 100/],
    [{ url: 'http://m', connections: 0 }, /option connections must be a whole number at least 1/],
    [{ url: 'http://m', headers: { a: 1 } }, /option headers /],
    [{ url: 'http://m', fetch: 'fetch' }, /option fetch /],
    [{ url: 'http://m', adminToken: '' }, /option adminToken /],
    [{ url: 'http://m', errorBackoffMs: -5 }, /option errorBackoffMs /],
    [{ url: 'http://m', maxLocalDenials: 0 }, /option maxLocalDenials /],
    [
      { url: 'http://m', timeout: 5 },
      /^memgate client: option timeout is not an option; the options are url, timeoutMs/,
    ],
    [null, /^memgate client: options must be an object/],
  ])('refuse %j with one line naming the option', (input, message) => {
    let thrown: unknown;
    try {
      resolveOptions(input);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(MemgateClientError);
    expect((thrown as MemgateClientError).code).toBe('invalid_option');
    expect((thrown as MemgateClientError).message).toMatch(message);
    expect((thrown as MemgateClientError).message).not.toContain('\n');
  });
});

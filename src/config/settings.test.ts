import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadSettings, SettingsError, USAGE } from './settings.js';

describe('loadSettings', () => {
  it('gives the caching settings their defaults', () => {
    expect(loadSettings({}, [])).toMatchObject({ maxClockSkewMs: 2000, cacheMb: 256, maxDenialCacheMs: 1000 });
  });

  it('reads them from the environment, 0 turning a cache off', () => {
    const env = { MEMGATE_MAX_CLOCK_SKEW_MS: '500', MEMGATE_CACHE_MB: '0', MEMGATE_MAX_DENIAL_CACHE_MS: '0' };
    expect(loadSettings(env, [])).toMatchObject({ maxClockSkewMs: 500, cacheMb: 0, maxDenialCacheMs: 0 });
  });

  it('refuses the replaced MEMGATE_FEATURE_CACHE_SIZE, naming its replacement', () => {
    expect(() => loadSettings({ MEMGATE_FEATURE_CACHE_SIZE: '10000' }, [])).toThrow('MEMGATE_FEATURE_CACHE_SIZE was replaced by MEMGATE_CACHE_MB');
  });

  it('takes SASL credentials in pairs, and keeps the password out of anything it prints', () => {
    expect(loadSettings({ MEMCACHED_USERNAME: 'memgate', MEMCACHED_PASSWORD: 'pw' }, []).memcachedCredentials).toEqual({ username: 'memgate', password: 'pw' });
    expect(() => loadSettings({ MEMCACHED_USERNAME: 'memgate' }, [])).toThrow('MEMCACHED_USERNAME and MEMCACHED_PASSWORD go together');
    expect(() => loadSettings({ MEMCACHED_PASSWORD: 'secret-value' }, [])).toThrow(SettingsError);
    expect(() => loadSettings({ MEMCACHED_PASSWORD: 'secret-value' }, [])).not.toThrow(/secret-value/);
  });

  it('drains for 5 s after SIGTERM unless told otherwise; 0 means no drain', () => {
    expect(loadSettings({}, []).shutdownDrainMs).toBe(5000);
    expect(loadSettings({ MEMGATE_SHUTDOWN_DRAIN_MS: '0' }, []).shutdownDrainMs).toBe(0);
    expect(loadSettings({ MEMGATE_SHUTDOWN_DRAIN_MS: '400' }, []).shutdownDrainMs).toBe(400);
    expect(USAGE).toMatch(/MEMGATE_SHUTDOWN_DRAIN_MS .*\(default 5000; 0 none; SIGINT skips it\)/);
  });

  it('lists in --help only settings that the README documents', () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const documented = new Set([...readme.matchAll(/^\| `([A-Z_]+)`(?:, `([A-Z_]+)`)? \|/gm)].flatMap((m) => [m[1], m[2]]));
    const listed = [...USAGE.matchAll(/^ {2}([A-Z][A-Z_]+)\b/gm)].map((m) => m[1]);
    expect(listed).toContain('MEMGATE_SHUTDOWN_DRAIN_MS');
    expect(listed.filter((name) => !documented.has(name))).toEqual([]);
  });

  it.each([
    ['MEMGATE_SHUTDOWN_DRAIN_MS', '-1'],
    ['MEMGATE_MAX_CLOCK_SKEW_MS', '-1'],
    ['MEMGATE_CACHE_MB', 'lots'],
    ['MEMGATE_MAX_DENIAL_CACHE_MS', '1.5'],
  ])('refuses %s=%s, naming it', (name, value) => {
    expect(() => loadSettings({ [name]: value }, [])).toThrow(SettingsError);
    expect(() => loadSettings({ [name]: value }, [])).toThrow(`${name} must be a whole number`);
  });
});

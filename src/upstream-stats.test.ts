import { describe, expect, it } from 'vitest';
import { hitCounts, sanitizeStatName } from './upstream-stats.js';

const counts = (limit: number, before: number, hits: number, over = before + hits > limit, shadow = false) =>
  hitCounts({ key: 'domain.key_value', limit, before, hits, over, shadow, fromMemory: false }, 0.8);

// The cases of upstream's base_limiter.go, on a limit of 10 (near from floor(10 × 0.8) = 8)
// and of 15 (near from 12), as its TestNearLimit counts them.
describe("upstream's hit arithmetic", () => {
  it('counts hits within the limit, and the ones past the near ratio as near_limit too', () => {
    expect(counts(10, 0, 5)).toEqual({
      total_hits: 5,
      over_limit: 0,
      near_limit: 0,
      within_limit: 5,
      shadow_mode: 0,
      over_limit_with_local_cache: 0,
    });
    expect(counts(10, 7, 2)).toEqual({
      total_hits: 2,
      over_limit: 0,
      near_limit: 1,
      within_limit: 2,
      shadow_mode: 0,
      over_limit_with_local_cache: 0,
    });
    expect(counts(10, 8, 2)).toEqual({
      total_hits: 2,
      over_limit: 0,
      near_limit: 2,
      within_limit: 2,
      shadow_mode: 0,
      over_limit_with_local_cache: 0,
    });
  });

  it('splits a call that crosses the limit between near_limit and over_limit, and counts hits past it over_limit', () => {
    // 9 + 3 = 12 of 10: 2 over, the 1 between 9 and 10 near.
    expect(counts(10, 9, 3)).toEqual({
      total_hits: 3,
      over_limit: 2,
      near_limit: 1,
      within_limit: 0,
      shadow_mode: 0,
      over_limit_with_local_cache: 0,
    });
    // From below the near ratio: near from 8 to 10.
    expect(counts(10, 5, 7)).toEqual({
      total_hits: 7,
      over_limit: 2,
      near_limit: 2,
      within_limit: 0,
      shadow_mode: 0,
      over_limit_with_local_cache: 0,
    });
    expect(counts(10, 10, 4)).toEqual({
      total_hits: 4,
      over_limit: 4,
      near_limit: 0,
      within_limit: 0,
      shadow_mode: 0,
      over_limit_with_local_cache: 0,
    });
    // Refused with room for them (its counter shared with another descriptor of the call): every hit over.
    expect(counts(10, 2, 1, true)).toEqual({
      total_hits: 1,
      over_limit: 1,
      near_limit: 0,
      within_limit: 0,
      shadow_mode: 0,
      over_limit_with_local_cache: 0,
    });
  });

  it('counts shadow_mode hits only past the limit, and floors the near threshold as float32', () => {
    expect(counts(10, 10, 1, true, true).shadow_mode).toBe(1);
    // Crossing the limit: only the hits past it, as upstream's increaseShadowModeStats.
    expect(counts(10, 9, 3, true, true)).toEqual({
      total_hits: 3,
      over_limit: 2,
      near_limit: 1,
      within_limit: 0,
      shadow_mode: 2,
      over_limit_with_local_cache: 0,
    });
    expect(counts(10, 1, 1, false, true).shadow_mode).toBe(0);
    // floor(15 × 0.8) = 12 (float32: 12.000000476…): the 13th hit is the first near one.
    expect(counts(15, 12, 1).near_limit).toBe(1);
    expect(counts(15, 11, 1).near_limit).toBe(0);
  });

  // upstream's test/limiter/base_limiter_test.go: TestGetResponseStatusOverLimitWithLocalCache and
  // TestGetResponseStatusOverLimitWithLocalCacheShadowMode (limit 5, 2 before, 2 hits).
  it('counts a denial from memory as over_limit and over_limit_with_local_cache, every hit, and shadow_mode in shadow', () => {
    const fromMemory = (shadow: boolean) =>
      hitCounts({ key: 'key_value', limit: 5, before: 2, hits: 2, over: true, shadow, fromMemory: true }, 0.8);
    expect(fromMemory(false)).toEqual({
      total_hits: 2,
      over_limit: 2,
      near_limit: 0,
      within_limit: 0,
      shadow_mode: 0,
      over_limit_with_local_cache: 2,
    });
    expect(fromMemory(true)).toMatchObject({ over_limit: 2, shadow_mode: 2, over_limit_with_local_cache: 2 });
  });
});

// upstream's utils.SanitizeStatName, which no upstream test covers: these cases follow its code.
describe("upstream's stat name sanitizing", () => {
  it('makes `:` and `|` `_`, and the dots of anything shaped like an IPv4 address, leaving other dots', () => {
    expect(sanitizeStatName('domain.key_value')).toBe('domain.key_value');
    expect(sanitizeStatName('domain.remote_address_10.0.0.1')).toBe('domain.remote_address_10_0_0_1');
    expect(sanitizeStatName('domain.path_/a:b|c')).toBe('domain.path_/a_b_c');
    expect(sanitizeStatName('d.ip_192.168.1.10.port_8080')).toBe('d.ip_192_168_1_10.port_8080');
    // Runs of one to three digits, wherever they are: the last four groups of a longer run.
    expect(sanitizeStatName('d.v_1234.5.6.7.8')).toBe('d.v_1234_5_6_7.8');
    expect(sanitizeStatName('d.ipv6_::ffff:10.1.2.3')).toBe('d.ipv6___ffff_10_1_2_3');
  });
});

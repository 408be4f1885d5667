import { describe, expect, it } from 'vitest';
import { rateLimitHeaders } from './rate-limit-headers.js';

const minute = { name: 'login-1m', limit: 5, window: 60, remaining: 0, resetSeconds: 12 };
const day = { name: 'login-1d', limit: 100, window: 86_400, remaining: 40, resetSeconds: 3000 };

describe('rateLimitHeaders', () => {
  it('lists every policy and names the one closest to exhaustion', () => {
    expect(rateLimitHeaders({ allowed: false, limits: [minute, day], retryAfter: 12 })).toEqual({
      'ratelimit-policy': '"login-1m";q=5;w=60, "login-1d";q=100;w=86400',
      ratelimit: '"login-1m";r=0;t=12',
      'retry-after': '12',
    });
  });

  it('breaks a tie on remaining by the later reset, and sends no Retry-After when allowed', () => {
    const headers = rateLimitHeaders({ allowed: true, limits: [{ ...minute, remaining: 40 }, day] });
    expect(headers.ratelimit).toBe('"login-1d";r=40;t=3000');
    expect(headers).not.toHaveProperty('retry-after');
  });
});

import { STATUS_CODES } from 'node:http';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES, INPUT_ERROR_CODES, PATH_ERROR_CODES } from './error-codes.js';

describe('the table of error codes', () => {
  it('keeps the library’s LimiterInputError codes, which are public API', () => {
    expect(INPUT_ERROR_CODES).toEqual([
      'invalid_event',
      'unknown_event',
      'invalid_feature',
      'feature_too_long',
      'invalid_cost',
      'cost_exceeds_limit',
      'invalid_tier',
      'unknown_tier',
      'invalid_time',
      'lease_off',
      'unknown_lease',
      'lease_returned',
      'lease_expired',
      'reserve_off',
      'unknown_reservation',
      'release_off',
      'unknown_slot',
      'reservation_settled',
      'reservation_expired',
    ]);
  });

  it('gives every code an HTTP error status and a description', () => {
    for (const [code, { status, when }] of Object.entries(ERROR_CODES)) {
      expect(STATUS_CODES[status], code).toBeDefined();
      expect(status, code).toBeGreaterThanOrEqual(400);
      expect(when.length, code).toBeGreaterThan(10);
    }
  });

  it('refuses /gate paths with client errors', () => {
    for (const code of PATH_ERROR_CODES) expect(ERROR_CODES[code].status).toBe(400);
  });
});

// The OpenAPI document, and the page at /docs in a real headless chromium. What the
// document says, and that its examples are real answers, is test/openapi.test.ts's.
import { access } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadPolicyFile } from '../src/config/policies.js';
import { createLimiter } from '../src/counting/limiter.js';
import { buildApp } from '../src/http/app.js';
import { createMetrics } from '../src/http/metrics.js';
import { createEmbeddedStore } from '../src/store/embedded-store.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const store = createEmbeddedStore();
let app: ReturnType<typeof buildApp>;
let url = '';

beforeAll(async () => {
  const limiter = createLimiter({ policies: await loadPolicyFile('docs/api-policies.yaml'), store });
  const admin = { token: 'docs-test-admin-token', reload: () => Promise.resolve({ source: '', events: [] }) };
  app = buildApp({ validateResponses: true, limiter, store, admin, metrics: createMetrics() });
  await app.listen({ port: 0, host: '127.0.0.1' });
  url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await app.close();
});

describe('API description', () => {
  it('is an OpenAPI 3 document built from every route’s schema', async () => {
    const doc = (await (await fetch(`${url}/docs/json`)).json()) as {
      openapi: string;
      paths: Record<
        string,
        Record<string, { parameters?: { name: string; required?: boolean }[]; responses: Record<string, unknown> }>
      >;
    };
    expect(doc.openapi).toMatch(/^3\./);
    expect(Object.keys(doc.paths).sort()).toEqual([
      '/admin/refund',
      '/admin/reload',
      '/admin/reset',
      '/check',
      '/check/batch',
      '/dashboard',
      '/gate',
      '/healthcheck',
      '/healthz',
      '/lease',
      '/lease/batch',
      '/lease/return',
      '/metrics',
      '/peek',
      '/policies',
      '/readyz',
      '/release',
      '/settle',
      '/usage',
      '/usage/events',
      '/usage/top',
    ]);
    const check = doc.paths['/check']?.get;
    expect(check?.parameters?.filter((p) => p.required).map((p) => p.name)).toEqual(['event', 'feature']);
    expect(Object.keys(check?.responses ?? {})).toEqual(['200', '400', '429', '503']);
  });

  it('is browsable at /docs in a real browser: every operation with its summary, and real examples', async () => {
    await access(CHROMIUM); // CI installs chromium; say so plainly when it is missing
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    try {
      const page = await browser.newPage();
      await page.goto(`${url}/docs`);
      // Swagger UI renders one block per operation from /docs/json.
      await page.locator('.opblock-summary-path', { hasText: '/check' }).first().waitFor({ timeout: 15_000 });
      const blocks: { method: string; path: string; summary: string }[] = [];
      for (const block of await page.locator('.opblock-summary').all()) {
        const text = async (selector: string) =>
          (await block.locator(selector).allInnerTexts()).join('').replace(/\u200b/g, '');
        blocks.push({
          method: await text('.opblock-summary-method'),
          path: await text('.opblock-summary-path'),
          summary: await text('.opblock-summary-description'),
        });
      }
      expect(blocks.filter((b) => b.summary.trim() === '')).toEqual([]);
      expect(blocks.filter((b) => b.path === '/gate').map((b) => b.method)).toEqual([
        'GET',
        'POST',
        'PUT',
        'PATCH',
        'DELETE',
        'HEAD',
        'OPTIONS',
        'TRACE',
      ]);
      expect(blocks.map((b) => b.path)).toEqual(expect.arrayContaining(['/check', '/peek', '/readyz', '/admin/reset']));

      // A reader opening GET /check sees a denial as a denial.
      await page.locator('#operations-decisions-get_check .opblock-summary').click();
      const denial = page.locator('#operations-decisions-get_check tr.response[data-code="429"]');
      const example = JSON.parse(await denial.locator('pre').first().innerText()) as {
        allowed: boolean;
        retryAfter: number;
      };
      expect(example).toMatchObject({ allowed: false, retryAfter: 60 });
      expect(await denial.innerText()).toContain('Retry-After');
    } finally {
      await browser.close();
    }
  });
});

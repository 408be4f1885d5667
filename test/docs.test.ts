// The OpenAPI document, and the page at /docs in a real headless chromium.
import { access } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLimiter } from '../src/counting/limiter.js';
import { buildApp } from '../src/http/app.js';
import { createEmbeddedStore } from '../src/store/embedded-store.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const store = createEmbeddedStore();
const app = buildApp({ limiter: createLimiter({ policies: { events: { login: { limits: [{ limit: 5, window: '1m' }] } } }, store }), store });
let url = '';

beforeAll(async () => {
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
      paths: Record<string, Record<string, { parameters?: { name: string; required?: boolean }[]; responses: Record<string, unknown> }>>;
    };
    expect(doc.openapi).toMatch(/^3\./);
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/check', '/peek', '/healthz', '/readyz', '/policies']));
    const check = doc.paths['/check']?.get;
    expect(check?.parameters?.filter((p) => p.required).map((p) => p.name)).toEqual(['event', 'feature']);
    expect(Object.keys(check?.responses ?? {})).toEqual(expect.arrayContaining(['200', '429', '503']));
  });

  it('is browsable at /docs in a real browser', async () => {
    await access(CHROMIUM); // CI installs chromium; say so plainly when it is missing
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    try {
      const page = await browser.newPage();
      await page.goto(`${url}/docs`);
      // Swagger UI renders one block per operation from /docs/json.
      await page.locator('.opblock-summary-path', { hasText: '/check' }).first().waitFor({ timeout: 15_000 });
      const paths = await page.locator('.opblock-summary-path').allInnerTexts();
      expect(paths.map((p) => p.replace(/\u200b/g, ''))).toEqual(expect.arrayContaining(['/check', '/peek', '/readyz']));
    } finally {
      await browser.close();
    }
  });
});

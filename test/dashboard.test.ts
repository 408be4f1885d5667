// The usage dashboard at /dashboard: its files as served, and the page in a real headless
// chromium against memgate in this process, with decisions recorded through /check.
import { access } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { chromium, type Browser, type Page, type Response } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, type TestContext } from 'vitest';
import { loadPolicyFile, parsePolicyText, type PolicySet } from '../src/config/policies.js';
import { createLimiter } from '../src/counting/limiter.js';
import { buildApp } from '../src/http/app.js';
import { registerDashboardRoutes } from '../src/http/routes/dashboard.js';
import { createEmbeddedStore } from '../src/store/embedded-store.js';
import { inMemoryUsage } from '../src/usage/in-memory-usage.js';
import { IN_CI } from './helpers/shared-files.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** login: 5 a minute and 100 a day; url_shorten: 100 a minute. */
const POLICY_FILE = 'docs/api-policies.yaml';
/** memgate's clock once the traffic is in: the last millisecond of a minute, so every point is whole. */
const NOW = Math.floor(Date.now() / 60_000) * 60_000 - 1;
const MINUTES = 10;
/** Over its login limit: 8 a minute, of which 5 are allowed. */
const HEAVY = '203.0.113.7';
const LIGHT = '198.51.100.23';
/** signup: a shadow limit of 5 a minute that HEAVY's 8 a minute go over, never refused; search: no shadow limit. */
const SHADOW_POLICIES = `events:
  signup:
    limits:
      - { limit: 1000, window: 1h }
      - { limit: 5, window: 1m, mode: shadow }
  search:
    limits:
      - { limit: 100, window: 1m }
`;

/**
 * llm_tokens: tokens reserved before an answer and settled at what it cost; search: no
 * reservations.
 */
const SETTLE_POLICIES = `events:
  llm_tokens:
    reservations: { life: 30s }
    limits:
      - { limit: 200000, window: 1m }
  search:
    limits:
      - { limit: 100, window: 1m }
`;
/** A tenant of llm_tokens, reserving 4,096 tokens a request. */
const TENANT = 'tenant-7';

type Check = (event: string, feature: string) => Promise<unknown>;

/** POSTs a JSON body to memgate, and its answer's JSON. */
type Post = (url: string, body: object) => Promise<Record<string, unknown>>;

/** The i-th of a minute's 8 rounds of /check against POLICY_FILE: HEAVY over its login limit. */
async function apiTraffic(check: Check, i: number): Promise<void> {
  await check('login', HEAVY);
  if (i % 4 === 0) await check('login', LIGHT);
  await check('url_shorten', LIGHT);
}

/** The same against SHADOW_POLICIES: HEAVY over signup's shadow limit, LIGHT searching. */
async function shadowTraffic(check: Check, i: number): Promise<void> {
  await check('signup', HEAVY);
  if (i % 4 === 0) await check('search', LIGHT);
}

/**
 * The same against SETTLE_POLICIES: TENANT reserves 4,096 tokens and settles at what each
 * answer cost (500 to 3,999), but in minute 6, whose reservations are never settled; LIGHT
 * searches.
 */
async function settleTraffic(check: Check, i: number, minute: number, post: Post): Promise<void> {
  const reserved = await post('/check', { event: 'llm_tokens', feature: TENANT, reserve: 4096 });
  const { id } = reserved.reservation as { id: string };
  if (minute !== 6) {
    const cost = 500 + (((minute * 8 + i) * 977) % 3500);
    await post('/settle', { event: 'llm_tokens', feature: TENANT, id, cost });
  }
  if (i % 4 === 0) await check('search', LIGHT);
}

interface Memgate {
  readonly url: string;
  close(): Promise<void>;
}

/**
 * memgate with usage history in memory (or none), after MINUTES of /check on a driven clock;
 * `top` heaviest clients kept per minute (20 by default). POLICY_FILE and apiTraffic unless told.
 */
async function startMemgate({
  usage,
  top,
  shadow = false,
  settles = false,
}: {
  usage: boolean;
  top?: number;
  /** SHADOW_POLICIES and shadowTraffic instead. */
  shadow?: boolean;
  /** SETTLE_POLICIES and settleTraffic instead. */
  settles?: boolean;
}): Promise<Memgate> {
  let now = NOW - MINUTES * 60_000;
  const clock = () => now;
  const policies: PolicySet = shadow
    ? parsePolicyText(SHADOW_POLICIES, 'shadow policies')
    : settles
      ? parsePolicyText(SETTLE_POLICIES, 'settle policies')
      : await loadPolicyFile(POLICY_FILE);
  const traffic = shadow ? shadowTraffic : settles ? settleTraffic : apiTraffic;
  const { recorder, history, close } = inMemoryUsage({
    policyEvents: () => policies.events.keys(),
    now: clock,
    ...(top === undefined ? {} : { top }),
  });
  const store = createEmbeddedStore({ now: clock });
  const limiter = createLimiter({
    policies,
    store,
    now: clock,
    onDecision: ({ kind, event, feature, decision }) => {
      if (usage && kind === 'check') recorder.record(event, feature, decision);
    },
    // As the service wires it: each settle's actual cost, at its second.
    onSettle: ({ event, cost }) => {
      if (usage) recorder.recordSettled(event, cost);
    },
  });
  const app = buildApp({
    validateResponses: true,
    limiter,
    store,
    maxEventLoopDelayMs: 0,
    ...(usage ? { usage: history } : {}),
  });
  const check = (event: string, feature: string) => app.inject(`/check?event=${event}&feature=${feature}`);
  const post: Post = async (url, payload) => {
    const answer = await app.inject({ method: 'POST', url, payload });
    if (answer.statusCode !== 200) throw new Error(`${url} answered ${answer.statusCode}: ${answer.body}`);
    return answer.json<Record<string, unknown>>();
  };
  for (let minute = 0; minute < MINUTES; minute++) {
    for (let i = 0; i < 8; i++) {
      now = NOW - (MINUTES - minute) * 60_000 + i * 7000;
      await traffic(check, i, minute, post);
    }
    // Some of it written, the newest still in memory: /usage answers from both.
    if (minute === MINUTES - 3) await recorder.flush();
  }
  now = NOW;
  await app.listen({ port: 0, host: '127.0.0.1' });
  return {
    url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`,
    close: async () => {
      await app.close();
      await close();
    },
  };
}

/** What went wrong while a page was open: console errors, failed requests, requests elsewhere. */
function watch(page: Page, origin: string) {
  const seen = { consoleErrors: [] as string[], failed: [] as string[], elsewhere: [] as string[] };
  page.on('console', (message) => {
    if (message.type() === 'error') seen.consoleErrors.push(message.text());
  });
  page.on('pageerror', (error) => seen.consoleErrors.push(error.message));
  page.on('request', (request) => {
    if (new URL(request.url()).origin !== origin) seen.elsewhere.push(request.url());
  });
  page.on('requestfailed', (request) => {
    // A newer range cancels the answer it no longer needs: that is not a failure.
    if (request.failure()?.errorText !== 'net::ERR_ABORTED')
      seen.failed.push(`${request.url()}: ${request.failure()?.errorText}`);
  });
  page.on('response', (response) => {
    if (response.status() >= 400) seen.failed.push(`${response.url()}: ${response.status()}`);
  });
  return seen;
}

/** The next answer of GET /usage whose query passes `wanted`. */
function usageAnswer(page: Page, wanted: (query: URLSearchParams) => boolean = () => true): Promise<Response> {
  return page.waitForResponse((response) => {
    const url = new URL(response.url());
    return url.pathname === '/usage' && wanted(url.searchParams);
  });
}

interface SeriesAnswer {
  from: number;
  until: number;
  step: number;
  points: unknown[];
}

/** An event's curve. */
interface EventSeries extends Omit<SeriesAnswer, 'points'> {
  points: {
    t: number;
    allowed: number;
    denied: number;
    shadow_denied: number;
    settled: number;
    settled_cost: number;
  }[];
}

/** A client's curve: each point says which of its counts are known. */
interface ClientSeries extends Omit<SeriesAnswer, 'points'> {
  points: { t: number; allowed: number; tracked: { allowed: boolean; denied: boolean } }[];
}

/** Pixels of a chart's canvas (the decisions', or another) close to this colour: what uPlot drew in it. */
function pixelsLike(page: Page, [r, g, b]: readonly [number, number, number], chart = '#chart'): Promise<number> {
  // A string, so this file needs no DOM types: it runs in the page.
  return page.evaluate(`(() => {
    const canvas = document.querySelector('${chart} canvas');
    if (!canvas) return 0;
    const { data } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
    let count = 0;
    for (let i = 0; i < data.length; i += 4)
      if (data[i + 3] > 0 && Math.abs(data[i] - ${r}) < 24 && Math.abs(data[i + 1] - ${g}) < 24 && Math.abs(data[i + 2] - ${b}) < 24) count++;
    return count;
  })()`);
}

/** --allowed, --limit and --shadow of dashboard.css's light theme. */
const ALLOWED = [21, 135, 90] as const;
const LIMIT = [106, 63, 200] as const;
const SHADOW = [29, 78, 216] as const;
/** --cost of dashboard.css's light theme. */
const COST = [14, 116, 144] as const;

describe('the dashboard’s files', () => {
  let app: ReturnType<typeof buildApp>;
  beforeAll(async () => {
    const store = createEmbeddedStore();
    app = buildApp({
      validateResponses: true,
      limiter: createLimiter({ policies: await loadPolicyFile(POLICY_FILE), store }),
      store,
    });
  });
  afterAll(() => app.close());

  it('are served with their types, a CSP of memgate’s own origin, and validators', async () => {
    const types: Record<string, string> = {
      '/dashboard': 'text/html',
      '/dashboard/dashboard.js': 'text/javascript',
      '/dashboard/dashboard.css': 'text/css',
      '/dashboard/uplot.min.js': 'text/javascript',
      '/dashboard/uplot.min.css': 'text/css',
      '/dashboard/favicon.svg': 'image/svg+xml',
    };
    for (const [url, type] of Object.entries(types)) {
      const answer = await app.inject(url);
      expect([url, answer.statusCode, answer.headers['content-type']]).toEqual([
        url,
        200,
        expect.stringContaining(type),
      ]);
      expect(answer.headers['content-security-policy']).toMatch(/^default-src 'self';/);
      expect(answer.headers['x-content-type-options']).toBe('nosniff');
      const again = await app.inject({ url, headers: { 'if-none-match': String(answer.headers.etag) } });
      expect([url, again.statusCode, again.body]).toEqual([url, 304, '']);
    }
    expect((await app.inject('/dashboard')).body).toContain('<title>memgate usage</title>');
  });

  it('are a fixed list: no other path reaches a file', async () => {
    for (const url of [
      '/dashboard/index.html',
      '/dashboard/../package.json',
      '/dashboard/%2e%2e/package.json',
      '/dashboard/..%2fpackage.json',
      '/dashboard/uPlot.iife.min.js',
    ]) {
      const answer = await app.inject(url);
      expect([url, answer.statusCode, answer.json<{ error: { code: string } }>().error.code]).toEqual([
        url,
        404,
        'not_found',
      ]);
    }
    const slash = await app.inject('/dashboard/');
    expect([slash.statusCode, slash.headers.location]).toEqual([302, '../dashboard']);
  });

  it('missing from an installation make /dashboard answer 500 saying so, not stop memgate', async () => {
    const bare = Fastify();
    registerDashboardRoutes(bare, { folder: '/nonexistent/dashboard' });
    const answer = await bare.inject('/dashboard');
    expect(answer.statusCode).toBe(500);
    const { error } = answer.json<{ error: { code: string; message: string } }>();
    expect(error.code).toBe('internal_error');
    expect(error.message).toContain('/nonexistent/dashboard/index.html');
    // uPlot comes from node_modules, and is still there.
    expect((await bare.inject('/dashboard/uplot.min.js')).statusCode).toBe(200);
    await bare.close();
  });
});

describe('the dashboard in chromium', () => {
  let browser: Browser | undefined;
  let memgate: Memgate;
  let off: Memgate;
  /** Keeps one client a minute per outcome: LIGHT's allowed checks go unnamed under HEAVY's. */
  let narrow: Memgate;
  /** SHADOW_POLICIES: signup's allowed checks over a shadow limit. */
  let shadowed: Memgate;
  /** SETTLE_POLICIES: llm_tokens's reservations, settled at their actual costs. */
  let settled: Memgate;

  beforeAll(async () => {
    [memgate, off, narrow, shadowed, settled] = await Promise.all([
      startMemgate({ usage: true }),
      startMemgate({ usage: false }),
      startMemgate({ usage: true, top: 1 }),
      startMemgate({ usage: true, shadow: true }),
      startMemgate({ usage: true, settles: true }),
    ]);
    const found = await access(CHROMIUM).then(
      () => true,
      () => false,
    );
    if (found) browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  });
  afterAll(async () => {
    await browser?.close();
    await Promise.all([memgate.close(), off.close(), narrow.close(), shadowed.close(), settled.close()]);
  });

  /** A page in a fresh context, or the test skipped (failed under CI) when chromium is missing. */
  async function newPage(test: TestContext): Promise<Page> {
    if (!browser) {
      const missing = `no chromium at ${CHROMIUM} (set CHROMIUM_PATH, or install the chromium package)`;
      if (IN_CI) throw new Error(missing);
      process.stderr.write(`skipped: ${missing}\n`);
      test.skip(missing);
      throw new Error(missing);
    }
    return browser.newPage({ viewport: { width: 1280, height: 800 }, colorScheme: 'light' });
  }

  it('draws the curve /usage answers, changes range, shows a client with its limits, and zooms', async (test) => {
    const page = await newPage(test);
    const seen = watch(page, memgate.url);
    const chart = page.locator('#chart');

    // Loads with the last hour of the event with the newest data, every point drawn.
    const first = usageAnswer(page);
    await page.goto(`${memgate.url}/dashboard`);
    const series = (await (await first).json()) as SeriesAnswer;
    expect(new URL((await first).url()).searchParams.get('from')).toBe('-1h');
    await page.locator('#chart[data-state="ready"]').waitFor();
    expect(await chart.getAttribute('data-points')).toBe(String(series.points.length));
    expect(series.points.length).toBeGreaterThan(20);
    expect(await pixelsLike(page, ALLOWED)).toBeGreaterThan(500);
    expect(await page.locator('#live').getAttribute('data-live')).toBe('true');
    await expect.poll(() => page.locator('#top .client').allInnerTexts()).toEqual([HEAVY, LIGHT]);

    // A client of the table: its own curve, with both login limits drawn in its unit.
    const client = usageAnswer(page, (query) => query.get('feature') === HEAVY);
    await page.locator('#top .client', { hasText: HEAVY }).click();
    const own = (await (await client).json()) as SeriesAnswer;
    await expect.poll(() => chart.getAttribute('data-feature')).toBe(HEAVY);
    expect(own.step).toBe(60);
    expect(await chart.getAttribute('data-points')).toBe(String(own.points.length));
    expect(await chart.getAttribute('data-limits')).toBe('2');
    const limits = page.locator('#limits');
    expect(await limits.innerText()).toContain('login-1m: 5 per 1 min, so at most 5 allowed in a point of 1 min.');
    expect(await limits.innerText()).toContain('login-1d: 100 per 1 d');
    expect(await limits.innerText()).toContain('no single point may exceed 100');
    expect(await pixelsLike(page, LIMIT)).toBeGreaterThan(200);
    expect(await page.locator('#client').inputValue()).toBe(HEAVY);
    expect(await page.locator('#top tr[aria-current="true"]').innerText()).toContain(HEAVY);

    // Another preset asks /usage again, for that range: a coarser step, and the limit scaled to it.
    const sixHours = usageAnswer(page, (query) => query.get('from') === '-6h' && query.get('until') === 'now');
    await page.getByRole('button', { name: '6 h' }).click();
    const wider = (await (await sixHours).json()) as SeriesAnswer;
    await expect.poll(() => chart.getAttribute('data-from')).toBe(String(wider.from));
    expect([wider.until - wider.from, wider.step]).toEqual([6 * 3600, 120]);
    expect(await chart.getAttribute('data-points')).toBe(String(wider.points.length));
    expect(await page.getByRole('button', { name: '6 h' }).getAttribute('aria-pressed')).toBe('true');
    expect(await limits.innerText()).toContain(
      'login-1m: 5 per 1 min, so at most 10 allowed in a point of 2 min (5 × 2 min ÷ 1 min).',
    );

    // A span dragged across the chart: that range, fixed, asked at a finer step.
    const box = await page.locator('#chart .u-over').boundingBox();
    if (!box) throw new Error('no plot area');
    const zoom = usageAnswer(page, (query) => /^\d+$/.test(query.get('from') ?? '') && query.get('feature') === HEAVY);
    await page.mouse.move(box.x + box.width * 0.9, box.y + box.height / 2);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * 0.99, box.y + box.height / 2, { steps: 5 });
    await page.mouse.up();
    const zoomed = (await (await zoom).json()) as SeriesAnswer;
    expect(zoomed.until - zoomed.from).toBeLessThan(wider.until - wider.from);
    expect(zoomed.from).toBeGreaterThanOrEqual(wider.from);
    expect(zoomed.step).toBeLessThan(wider.step);
    await expect.poll(() => page.locator('#live').getAttribute('data-live')).toBe('false');
    expect(await chart.getAttribute('data-points')).toBe(String(zoomed.points.length));

    // Zoom out: back to the last six hours, live again.
    const back = usageAnswer(page, (query) => query.get('from') === '-6h');
    await page.getByRole('button', { name: 'Zoom out' }).click();
    await back;
    await expect.poll(() => page.locator('#live').getAttribute('data-live')).toBe('true');

    expect(seen).toEqual({ consoleErrors: [], failed: [], elsewhere: [] });
    await page.close();
  });

  it('shades the steps where a client was below the heaviest, and says "not tracked" there, not 0', async (test) => {
    const page = await newPage(test);
    const seen = watch(page, narrow.url);
    const chart = page.locator('#chart');
    const answer = usageAnswer(page, (query) => query.get('feature') === LIGHT);
    await page.goto(`${narrow.url}/dashboard#event=login&client=${encodeURIComponent(LIGHT)}&range=1h`);
    const light = (await (await answer).json()) as ClientSeries;
    await expect.poll(() => chart.getAttribute('data-feature')).toBe(LIGHT);
    // Every minute of the traffic: LIGHT's 2 allowed checks went unnamed under HEAVY's 5.
    const unknown = light.points.filter((point) => !point.tracked.allowed);
    expect(unknown.length).toBeGreaterThanOrEqual(MINUTES - 1);
    expect(unknown.every((point) => point.allowed === 0)).toBe(true);
    expect(await chart.getAttribute('data-untracked')).toBe(String(unknown.length));
    expect(await page.locator('#limits').innerText()).toContain(
      `Not tracked in ${unknown.length} of ${light.points.length} points (shaded)`,
    );
    // The legend at a shaded step.
    const box = await page.locator('#chart .u-over').boundingBox();
    if (!box) throw new Error('no plot area');
    const step = unknown.at(-1);
    if (!step) throw new Error('no unknown step');
    const x = box.x + ((step.t + light.step / 2 - light.from) / (light.until - light.from)) * box.width;
    await page.mouse.move(x, box.y + box.height / 2);
    await expect.poll(() => page.locator('.u-legend .u-series').nth(1).innerText()).toContain('not tracked');
    await page.screenshot({ path: `${process.env.DASHBOARD_SHOTS ?? '/tmp'}/dashboard-untracked.png` });

    // HEAVY was named in most minutes (a sliding window may let LIGHT tie it in one): shaded
    // where /usage says, and less.
    const heavyAnswer = usageAnswer(page, (query) => query.get('feature') === HEAVY);
    await page.selectOption('#client', HEAVY);
    const heavy = (await (await heavyAnswer).json()) as ClientSeries;
    await expect.poll(() => chart.getAttribute('data-feature')).toBe(HEAVY);
    const heavyUnknown = heavy.points.filter((point) => !point.tracked.allowed || !point.tracked.denied).length;
    expect(heavyUnknown).toBeLessThan(unknown.length / 2);
    expect(await chart.getAttribute('data-untracked')).toBe(String(heavyUnknown));
    expect(seen).toEqual({ consoleErrors: [], failed: [], elsewhere: [] });
    await page.close();
  });

  it('draws what a shadow limit would have denied as a dashed line with a legend entry, only where there is some', async (test) => {
    const page = await newPage(test);
    const seen = watch(page, shadowed.url);
    const chart = page.locator('#chart');
    const legend = page.locator('.u-legend .u-series');
    const label = 'would be denied (shadow)';
    const answer = usageAnswer(page, (query) => query.get('event') === 'signup');
    await page.goto(`${shadowed.url}/dashboard#event=signup&range=1h`);
    const signup = (await (await answer).json()) as EventSeries;
    await page.locator('#chart[data-state="ready"]').waitFor();
    // Every signup served, and some a minute over the shadow limit: a part of allowed.
    const shadowDenied = signup.points.reduce((sum, point) => sum + point.shadow_denied, 0);
    expect(shadowDenied).toBeGreaterThanOrEqual(MINUTES);
    expect(signup.points.every((point) => point.denied === 0 && point.shadow_denied <= point.allowed)).toBe(true);
    expect(await chart.getAttribute('data-shadow-denied')).toBe(String(shadowDenied));
    expect(await legend.allInnerTexts()).toContainEqual(expect.stringContaining(label));
    expect(await pixelsLike(page, SHADOW)).toBeGreaterThan(100);
    expect(await page.locator('#shadow-note').isVisible()).toBe(true);

    // At a step with some, the legend gives that step's own count, not a stack's; 700 px
    // wide too, as a phone or a split screen shows it (the screenshot is for a person to look at).
    const busy = signup.points.findLast((point) => point.shadow_denied > 0);
    if (!busy) throw new Error('no step with shadow_denied');
    const entry = legend.filter({ hasText: label });
    for (const width of [1280, 700]) {
      await page.setViewportSize({ width, height: 800 });
      await expect
        .poll(async () => (await page.locator('#chart canvas').boundingBox())?.width ?? 0)
        .toBeLessThan(width);
      const box = await page.locator('#chart .u-over').boundingBox();
      if (!box) throw new Error('no plot area');
      const x = box.x + ((busy.t + signup.step / 2 - signup.from) / (signup.until - signup.from)) * box.width;
      await page.mouse.move(x, box.y + box.height / 2);
      await expect.poll(() => entry.innerText()).toMatch(new RegExp(`\\D${busy.shadow_denied}$`));
    }
    await page.screenshot({
      path: `${process.env.DASHBOARD_SHOTS ?? '/tmp'}/dashboard-shadow-700.png`,
      fullPage: true,
    });

    // An event without shadow limits looks as it always did: no line, no entry, no note.
    const searchAnswer = usageAnswer(page, (query) => query.get('event') === 'search');
    await page.selectOption('#event', 'search');
    const search = (await (await searchAnswer).json()) as EventSeries;
    expect(search.points.some((point) => point.allowed > 0)).toBe(true);
    expect(search.points.every((point) => point.shadow_denied === 0)).toBe(true);
    await expect.poll(() => chart.getAttribute('data-shadow-denied')).toBe('0');
    expect(await legend.allInnerTexts()).not.toContainEqual(expect.stringContaining('shadow'));
    expect(await pixelsLike(page, SHADOW)).toBe(0);
    expect(await page.locator('#shadow-note').isVisible()).toBe(false);
    expect(seen).toEqual({ consoleErrors: [], failed: [], elsewhere: [] });
    await page.close();
  });

  it('draws the settled costs on a chart of their own under the decisions, only where some were settled', async (test) => {
    const page = await newPage(test);
    const seen = watch(page, settled.url);
    const chart = page.locator('#chart');
    const costs = page.locator('#costs');
    const costLegend = page.locator('#cost-chart .u-legend .u-series');
    const answer = usageAnswer(page, (query) => query.get('event') === 'llm_tokens' && !query.has('feature'));
    await page.goto(`${settled.url}/dashboard#event=llm_tokens&range=1h`);
    const llm = (await (await answer).json()) as EventSeries;
    await page.locator('#chart[data-state="ready"]').waitFor();
    // Every request reserved and was allowed; all but one minute's were settled, at their costs.
    const total = llm.points.reduce(
      (sum, point) => ({ settled: sum.settled + point.settled, cost: sum.cost + point.settled_cost }),
      { settled: 0, cost: 0 },
    );
    expect(total.settled).toBe((MINUTES - 1) * 8);
    expect(await chart.getAttribute('data-settled')).toBe(String(total.settled));
    expect(await chart.getAttribute('data-settled-cost')).toBe(String(total.cost));
    expect(await costs.isVisible()).toBe(true);
    expect(await page.locator('#costs-total').innerText()).toBe(
      `${total.cost.toLocaleString('en')} in all, from ${total.settled} settles`,
    );
    expect(await pixelsLike(page, COST, '#cost-chart')).toBeGreaterThan(300);
    // The decisions' chart draws no cost: its scale stays that of the decisions.
    expect(await pixelsLike(page, COST)).toBe(0);
    expect(await page.locator('#chart .u-legend').innerText()).not.toContain('cost');
    // Both charts are as wide, with their plots at the same x: a step lies over its cost.
    const [decisions, costPlot] = await Promise.all([
      page.locator('#chart .u-over').boundingBox(),
      page.locator('#cost-chart .u-over').boundingBox(),
    ]);
    if (!decisions || !costPlot) throw new Error('no plot area');
    expect([costPlot.x, costPlot.width]).toEqual([decisions.x, decisions.width]);
    expect(costPlot.y).toBeGreaterThan(decisions.y + decisions.height);

    // Hovering a step of the decisions shows its cost in the cost chart's legend too, and
    // the minute never settled reads 0.
    const busy = llm.points.findLast((point) => point.settled > 0);
    const unsettledMinute = llm.points.find((point) => point.allowed > 0 && point.settled === 0);
    if (!busy || !unsettledMinute) throw new Error('no step with settles, or none without');
    for (const width of [1280, 700]) {
      await page.setViewportSize({ width, height: 900 });
      await expect
        .poll(async () => (await page.locator('#cost-chart canvas').boundingBox())?.width ?? 0)
        .toBeLessThan(width);
      const box = await page.locator('#chart .u-over').boundingBox();
      if (!box) throw new Error('no plot area');
      const x = (t: number) => box.x + ((t + llm.step / 2 - llm.from) / (llm.until - llm.from)) * box.width;
      await page.mouse.move(x(busy.t), box.y + box.height / 2);
      await expect
        .poll(() => costLegend.nth(1).innerText())
        .toMatch(
          new RegExp(`Settled cost\\s*${busy.settled_cost.toLocaleString('en')} \\(${busy.settled} settles?\\)$`),
        );
      await page.mouse.move(x(unsettledMinute.t), box.y + box.height / 2);
      await expect.poll(() => costLegend.nth(1).innerText()).toMatch(/Settled cost\s*0 \(0 settles\)$/);
      await page.mouse.move(x(busy.t), box.y + box.height / 2);
      await page.screenshot({
        path: `${process.env.DASHBOARD_SHOTS ?? '/tmp'}/dashboard-settled-${width}.png`,
        fullPage: true,
      });
    }

    // A client's curve: settles are counted per event, so no cost chart.
    const client = usageAnswer(page, (query) => query.get('feature') === TENANT);
    await page.selectOption('#client', TENANT);
    const own = (await (await client).json()) as EventSeries;
    expect(own.points.every((point) => point.settled === 0 && point.settled_cost === 0)).toBe(true);
    await expect.poll(() => chart.getAttribute('data-feature')).toBe(TENANT);
    expect(await costs.isVisible()).toBe(false);
    expect(await page.locator('#cost-chart canvas').count()).toBe(0);

    // An event without reservations looks as it always did.
    const searchAnswer = usageAnswer(page, (query) => query.get('event') === 'search');
    await page.selectOption('#event', 'search');
    await searchAnswer;
    await expect.poll(() => chart.getAttribute('data-settled')).toBe('0');
    expect(await costs.isVisible()).toBe(false);
    expect(seen).toEqual({ consoleErrors: [], failed: [], elsewhere: [] });
    await page.close();
  });

  it('keeps the time axis readable 700 px wide, in every range: no label runs into the next', async (test) => {
    const page = await newPage(test);
    await page.setViewportSize({ width: 700, height: 800 });
    const chart = page.locator('#chart');
    await page.goto(`${memgate.url}/dashboard#event=login&range=1h`);
    await chart.locator('canvas').waitFor();
    for (const preset of ['5 min', '1 h', '6 h', '24 h', '7 d', '30 d', '1 y', '2 y']) {
      const answer = usageAnswer(page, (query) => query.get('until') === 'now');
      await page.getByRole('button', { name: preset, exact: true }).click();
      const series = (await (await answer).json()) as SeriesAnswer;
      await expect.poll(() => chart.getAttribute('data-from')).toBe(String(series.from));
      // Each label's widest line, as uPlot's default axis font draws it, centred on its tick.
      const crowded: string = await page.evaluate(`(() => {
        const ticks = JSON.parse(document.querySelector('#chart').dataset.timeTicks);
        const ctx = document.createElement('canvas').getContext('2d');
        ctx.font = '12px system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, "Noto Sans", sans-serif';
        const width = (label) => Math.max(...label.split('\\n').map((line) => ctx.measureText(line).width));
        const problems = [];
        if (ticks.length < 3) problems.push('only ' + ticks.length + ' ticks');
        for (let i = 1; i < ticks.length; i++) {
          const gap = ticks[i].x - width(ticks[i].label) / 2 - (ticks[i - 1].x + width(ticks[i - 1].label) / 2);
          if (gap < 8) problems.push(JSON.stringify(ticks[i - 1].label) + ' and ' + JSON.stringify(ticks[i].label) + ' ' + Math.round(gap) + ' px apart');
        }
        return problems.join('; ');
      })()`);
      expect({ preset, crowded }).toEqual({ preset, crowded: '' });
    }
    await page.close();
  });

  it('shows memgate’s message, not a blank chart, when /usage refuses', async (test) => {
    const page = await newPage(test);
    // memgate's own refusal of a range, in place of the answer the page asked for.
    const refusal = `${memgate.url}/usage?event=login&from=now&until=-1h`;
    await page.route(
      (url) => url.pathname === '/usage',
      async (route) => route.fulfill({ response: await route.fetch({ url: refusal }) }),
    );
    await page.goto(`${memgate.url}/dashboard`);
    const message = page.locator('#message');
    await expect.poll(() => message.innerText()).toMatch(/^from \(\d+\) must be before until \(\d+\)$/);
    expect(await message.isVisible()).toBe(true);
    expect(await page.locator('#chart').getAttribute('data-state')).toBe('error');
    await page.close();
  });

  it('says plainly when usage history is off', async (test) => {
    const page = await newPage(test);
    const seen = watch(page, off.url);
    await page.goto(`${off.url}/dashboard`);
    const message = page.locator('#message');
    await expect.poll(() => message.innerText()).toContain('Usage history is off on this memgate');
    expect(await message.innerText()).toContain('MEMGATE_USAGE_DB');
    expect(await page.locator('#chart').getAttribute('data-state')).toBe('off');
    // Its one 404 is how the page learns it: usage_off, answered as documented.
    expect(seen.failed).toEqual([`${off.url}/usage/events: 404`]);
    expect(seen.consoleErrors.filter((text) => !text.includes('status of 404'))).toEqual([]);
    expect(seen.elsewhere).toEqual([]);
    await page.close();
  });
});

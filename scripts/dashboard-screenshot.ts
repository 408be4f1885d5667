// The README's picture of /dashboard: memgate in this process, an hour of made-up traffic
// on a driven clock, the page in headless chromium, a PNG.
//   npm run dashboard-screenshot -- [--out docs/images/dashboard.png]
//   (without that npm script: npx tsx scripts/dashboard-screenshot.ts ...)
import { access, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { dirname } from 'node:path';
import { chromium } from 'playwright-core';
import { loadPolicyFile } from '../src/config/policies.js';
import { createLimiter } from '../src/counting/limiter.js';
import { buildApp } from '../src/http/app.js';
import { createEmbeddedStore } from '../src/store/embedded-store.js';
import { StoreUnavailableError, type CounterStore } from '../src/store/counter-store.js';
import { inMemoryUsage } from '../src/usage/in-memory-usage.js';
import { runCommand, UsageError } from '../src/commands/command-line.js';
import { outputDirectory } from '../src/commands/output.js';

const USAGE = `usage: npm run dashboard-screenshot -- [options]

  --out FILE        the PNG, its folder made if missing; - for standard output
                    (default docs/images/dashboard.png)
  --theme THEME     light or dark (default light)
  --client CLIENT   show this client's curve and limits instead of the whole event
  --range RANGE     one of the page's presets: 5min, 1h, 6h, 24h, 7d, 30d, 1y, 2y (default 1h)
  --width PX        the window's width, at least 600 (default 1280): to see the axes narrow

Runs memgate in this process with config/policies.yaml and an hour of generated traffic
(a steady crowd, one client over its limit for twenty minutes, a store outage of two
minutes), opens /dashboard in chromium (CHROMIUM_PATH, default /usr/bin/chromium) and
writes what it shows. Exits 0 once written.`;

const POLICY_FILE = 'config/policies.yaml';
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const VIEWPORT = { width: 1280, height: 780 };
/** The page's range presets (dashboard/index.html). */
const RANGES = ['5min', '1h', '6h', '24h', '7d', '30d', '1y', '2y'];
/** The event the picture shows, and the client that goes over its limit. */
const EVENT = 'url_shorten';
const HEAVY = '203.0.113.7';

runCommand(
  {
    name: 'dashboard-screenshot',
    usage: USAGE,
    options: {
      out: { type: 'string', default: 'docs/images/dashboard.png' },
      theme: { type: 'string', default: 'light' },
      client: { type: 'string' },
      range: { type: 'string', default: '1h' },
      width: { type: 'string', default: String(VIEWPORT.width) },
    },
  },
  async ({ values, fail }) => {
    const theme =
      values.theme === 'dark' || values.theme === 'light' ? values.theme : fail('--theme must be light or dark');
    if (!RANGES.includes(values.range)) fail(`--range must be one of ${RANGES.join(', ')}`);
    const width = Number(values.width);
    if (!Number.isInteger(width) || width < 600) fail('--width must be a whole number of pixels, at least 600');
    await access(CHROMIUM).catch(() => {
      throw new UsageError(`no chromium at ${CHROMIUM}: install it, or set CHROMIUM_PATH`);
    });
    const toStdout = values.out === '-';
    if (!toStdout) await outputDirectory(dirname(values.out));

    const memgate = await startMemgate();
    try {
      const png = await screenshot(memgate.url, { theme, client: values.client, range: values.range, width });
      if (toStdout) process.stdout.write(png);
      else {
        await writeFile(values.out, png);
        console.error(`wrote ${values.out} (${Math.round(png.length / 1024)} KiB)`);
      }
    } finally {
      await memgate.close();
    }
    return undefined;
  },
);

/** memgate on a clock stopped at the end of an hour of traffic, listening on a free port. */
async function startMemgate(): Promise<{ url: string; close: () => Promise<void> }> {
  // The traffic ends at the last whole minute, so the page's clock and memgate's agree; it
  // begins a little over an hour before, so the first point drawn is a whole one too.
  const end = Math.floor(Date.now() / 60_000) * 60_000;
  const seconds = 3900;
  const start = end - seconds * 1000;
  let now = start;
  const clock = () => now;
  const policies = await loadPolicyFile(POLICY_FILE);
  const { recorder, history: usage, close } = inMemoryUsage({ policyEvents: () => policies.events.keys(), now: clock });
  const outage = { from: start + 46 * 60_000, until: start + 48 * 60_000 };
  const limiter = createLimiter({
    policies,
    store: flaky(createEmbeddedStore({ now: clock }), () => now >= outage.from && now < outage.until),
    now: clock,
    onDecision: ({ kind, event, feature, decision }) => {
      if (kind === 'check') recorder.record(event, feature, decision);
    },
  });
  const app = buildApp({ limiter, store: createEmbeddedStore(), usage, maxEventLoopDelayMs: 0 });

  const random = mulberry32(20261123);
  const clients = Array.from({ length: 60 }, (_, i) => ({
    feature: `198.51.100.${10 + i}`,
    // A few busy clients, many quiet ones.
    perSecond: 0.02 + 0.9 * random() ** 4,
  }));
  for (let second = 0; second < seconds; second++) {
    // Busier as the hour goes on, with a bump half-way.
    const load = 0.7 + 0.5 * (second / seconds) + 0.35 * Math.exp(-(((second - 1800) / 400) ** 2));
    const asks: string[] = [];
    for (const client of clients) if (random() < client.perSecond * load) asks.push(client.feature);
    // One client goes over 100 a minute for twenty minutes: a scraper, say.
    if (second >= 2100 && second < 3300) for (let i = 0; i < 3; i++) if (random() < 0.85) asks.push(HEAVY);
    if (random() < 0.08) asks.push(`192.0.2.${Math.floor(random() * 40)}`);
    for (const [i, feature] of asks.entries()) {
      now = start + second * 1000 + Math.floor((1000 * i) / asks.length);
      await app.inject({ method: 'GET', url: `/check?event=${EVENT}&feature=${feature}` });
      // Some logins too, so the event picker has more than one event with data.
      if (random() < 0.1) await app.inject({ method: 'GET', url: `/check?event=login&feature=${feature}` });
    }
    if (second % 15 === 14) await recorder.flush();
  }
  // Stopped in the last second of the traffic: the newest point drawn is a whole one.
  now = end - 1;
  await recorder.flush();
  await app.listen({ port: 0, host: '127.0.0.1' });
  return {
    url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`,
    close: async () => {
      await app.close();
      await close();
    },
  };
}

/** The store, failing every call while `down()`: decisions then follow the event's onStoreError. */
function flaky(store: CounterStore, down: () => boolean): CounterStore {
  const refuse = () => Promise.reject(new StoreUnavailableError('the store is down (simulated)'));
  return Object.assign(Object.create(store) as CounterStore, {
    incrementAndRead: (...args: Parameters<CounterStore['incrementAndRead']>) =>
      down() ? refuse() : store.incrementAndRead(...args),
    readVersioned: (...args: Parameters<CounterStore['readVersioned']>) =>
      down() ? refuse() : store.readVersioned(...args),
    swap: (...args: Parameters<CounterStore['swap']>) => (down() ? refuse() : store.swap(...args)),
  });
}

interface Shot {
  readonly theme: 'light' | 'dark';
  readonly client: string | undefined;
  readonly range: string;
  readonly width: number;
}

async function screenshot(url: string, { theme, client, range, width }: Shot): Promise<Buffer> {
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  try {
    const page = await browser.newPage({
      viewport: { ...VIEWPORT, width },
      deviceScaleFactor: 2,
      colorScheme: theme,
      locale: 'en-GB',
      timezoneId: 'UTC',
    });
    const hash = new URLSearchParams({ event: EVENT, range, ...(client ? { client } : {}) });
    await page.goto(`${url}/dashboard#${hash.toString()}`);
    await page.locator('#chart[data-state="ready"]').waitFor();
    await page.locator('#top tbody tr').first().waitFor();
    // The cursor on the overloaded stretch, so the legend shows its counts.
    const box = await page.locator('#chart .u-over').boundingBox();
    if (box) await page.mouse.move(box.x + box.width * 0.62, box.y + box.height * 0.5);
    return await page.screenshot({ fullPage: true });
  } finally {
    await browser.close();
  }
}

/** A small seeded generator, so that every run draws the same picture. */
function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

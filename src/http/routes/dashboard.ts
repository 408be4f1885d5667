import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { sendError } from '../errors.js';

/** The dashboard's own files, in dashboard/ beside src/ and dist/ (as config/ is). */
export const DASHBOARD_FOLDER = fileURLToPath(new URL('../../../dashboard/', import.meta.url));

/** uPlot's built files, from its npm package: the page loads nothing from another host. */
const UPLOT_FOLDER = join(dirname(createRequire(import.meta.url).resolve('uplot/package.json')), 'dist');

/**
 * Only memgate's own origin, for everything: what the page promises (no request to any
 * other host) the browser enforces. No inline script or style: uPlot sets styles through
 * the DOM, which this allows.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "base-uri 'none'",
  "object-src 'none'",
  "form-action 'self'",
  "frame-ancestors 'self'",
].join('; ');

interface Asset {
  /** Where it is served; the page names each relative to /dashboard. */
  readonly url: string;
  /** The dashboard's own folder, or uPlot's. */
  readonly from: 'dashboard' | 'uplot';
  readonly file: string;
  readonly type: string;
}

/** Every file served: a fixed list, so no request can name another file. */
const ASSETS: readonly Asset[] = [
  { url: '/dashboard', from: 'dashboard', file: 'index.html', type: 'text/html; charset=utf-8' },
  { url: '/dashboard/dashboard.js', from: 'dashboard', file: 'dashboard.js', type: 'text/javascript; charset=utf-8' },
  { url: '/dashboard/dashboard.css', from: 'dashboard', file: 'dashboard.css', type: 'text/css; charset=utf-8' },
  { url: '/dashboard/favicon.svg', from: 'dashboard', file: 'favicon.svg', type: 'image/svg+xml' },
  { url: '/dashboard/uplot.min.js', from: 'uplot', file: 'uPlot.iife.min.js', type: 'text/javascript; charset=utf-8' },
  { url: '/dashboard/uplot.min.css', from: 'uplot', file: 'uPlot.min.css', type: 'text/css; charset=utf-8' },
];

/** A file as served: its bytes and their ETag, or why it could not be read. */
type Loaded = { readonly body: Buffer; readonly etag: string } | { readonly missing: string };

export interface DashboardOptions {
  /** Where the page, its script and its style are. Default DASHBOARD_FOLDER. */
  readonly folder?: string;
}

/**
 * GET /dashboard: a page that draws /usage, /usage/top and /policies in the browser. It
 * loads whether usage history is on or not (the page then says it is off), and takes
 * nothing from another host: uPlot comes from memgate's node_modules.
 */
export function registerDashboardRoutes(
  app: FastifyInstance,
  { folder = DASHBOARD_FOLDER }: DashboardOptions = {},
): void {
  for (const asset of ASSETS) {
    // Read at registration, once per process: a missing file (an image built without
    // dashboard/) makes its route answer 500 saying so, and memgate serves the rest.
    const loaded = load(asset.from === 'dashboard' ? folder : UPLOT_FOLDER, asset.file);
    const schema = asset.url === '/dashboard' ? dashboardRoute : { hide: true };
    app.get(asset.url, { schema }, (request, reply) => send(request, reply, asset, loaded));
  }
  // /dashboard/ would load the page with its relative links one folder too deep.
  app.get('/dashboard/', { schema: { hide: true } }, (_request, reply) => reply.redirect('../dashboard'));
}

/** Each file read once per process, however many apps serve it (tests build many). */
const loadedFiles = new Map<string, Loaded>();

function load(folder: string, file: string): Loaded {
  const path = join(folder, file);
  let loaded = loadedFiles.get(path);
  if (!loaded) loadedFiles.set(path, (loaded = read(path)));
  return loaded;
}

function read(path: string): Loaded {
  try {
    const body = readFileSync(path);
    return { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` };
  } catch (error) {
    return { missing: `${path} (${(error as NodeJS.ErrnoException).code ?? String(error)})` };
  }
}

function send(request: FastifyRequest, reply: FastifyReply, asset: Asset, loaded: Loaded): FastifyReply {
  if ('missing' in loaded)
    return sendError(
      reply,
      'internal_error',
      `the dashboard's files are missing from this installation: ${loaded.missing}`,
    );
  void reply
    .header('content-security-policy', CONTENT_SECURITY_POLICY)
    .header('x-content-type-options', 'nosniff')
    // Asked again each time, answered 304 while unchanged: an upgraded memgate serves its new page at once.
    .header('cache-control', 'no-cache')
    .header('etag', loaded.etag);
  if (request.headers['if-none-match'] === loaded.etag) return reply.code(304).send();
  return reply.type(asset.type).send(loaded.body);
}

/** The first lines of the page, as served (test/openapi.test.ts finds each in the answer). */
const PAGE_EXAMPLE = ['<!doctype html>', '<html lang="en">', '    <title>memgate usage</title>'].join('\n');

export const dashboardRoute = {
  summary: 'The usage dashboard',
  description:
    'A page for people: the allowed, denied and degraded decisions of an event as a stacked curve over any range (presets from 5 minutes to 2 years, a custom range, or a span dragged across the chart), refreshed every few seconds while the range ends now; the heaviest clients of the range, and a client’s own curve with its limits drawn. It draws `/usage`, `/usage/top` and `/policies` in the browser, with uPlot served by memgate: the page loads nothing from another host (its Content-Security-Policy allows only memgate). With usage history off it still loads, and says so.',
  tags: ['usage'],
  produces: ['text/html'],
  response: {
    200: {
      type: 'string',
      'x-response-description': 'The page (HTML); its script and style are served under /dashboard/',
      examples: [PAGE_EXAMPLE],
    },
  },
};

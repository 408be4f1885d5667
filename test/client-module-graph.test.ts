// Importing memgate/client (the built package entry) loads no fastify, no memjs and no
// `node:` module; undici only on the first request, and never with a caller's fetch.
// Recorded by a resolve hook (module.register) in a fresh node process.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServiceProcess, type ServiceProcess } from './helpers/service-process.js';

const run = promisify(execFile);
const root = new URL('../', import.meta.url);

// Runs in the hooks' thread: appends every module resolved to the log file.
const HOOKS = `
import { appendFileSync } from 'node:fs';
let log;
export function initialize(data) { log = data.log; }
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  appendFileSync(log, resolved.url + '\\n');
  return resolved;
}
`;

// The process under test: marks the log, imports the package entry, marks, checks once, marks.
const PROGRAM = `
import { appendFileSync } from 'node:fs';
import { register } from 'node:module';
const log = process.env.GRAPH_LOG;
register('data:text/javascript,' + encodeURIComponent(process.env.GRAPH_HOOKS), { data: { log } });
appendFileSync(log, '--- import\\n');
const { createClient } = await import('memgate/client');
appendFileSync(log, '--- check\\n');
// A long timeout: the service decides the check however loaded the machine, not the client.
const client = createClient({ url: process.env.MEMGATE_URL, timeoutMs: 60000, ...(process.env.WITH_FETCH ? { fetch: globalThis.fetch } : {}) });
const decision = await client.check('login', 'module-graph');
await client.close();
appendFileSync(log, '--- end\\n');
console.log(JSON.stringify(decision));
`;

/** The modules resolved while importing memgate/client, and while it made its first check. */
async function loadedModules(memgateUrl: string, withFetch: boolean) {
  const folder = mkdtempSync(join(tmpdir(), 'memgate-graph-'));
  const log = join(folder, 'modules.log');
  writeFileSync(log, '');
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', PROGRAM], {
    cwd: root,
    env: {
      PATH: process.env.PATH,
      GRAPH_LOG: log,
      GRAPH_HOOKS: HOOKS,
      MEMGATE_URL: memgateUrl,
      ...(withFetch ? { WITH_FETCH: '1' } : {}),
    },
  });
  const text = readFileSync(log, 'utf8');
  const section = (from: string, to: string) =>
    text
      .slice(text.indexOf(`--- ${from}\n`) + from.length + 5, text.indexOf(`--- ${to}\n`))
      .split('\n')
      .filter(Boolean);
  return {
    decision: JSON.parse(stdout) as { allowed: boolean; source: string },
    atImport: section('import', 'check'),
    atCheck: section('check', 'end'),
  };
}

describe('memgate/client module graph', () => {
  let memgate: ServiceProcess;
  beforeAll(async () => {
    // The package entry points at dist/: build it (incremental, quick when up to date).
    await run(process.execPath, [join(root.pathname, 'node_modules/typescript/bin/tsc'), '-b', 'tsconfig.build.json'], {
      cwd: root,
    });
    memgate = await startServiceProcess({});
  }, 120_000);
  afterAll(async () => {
    await memgate.stop();
  });

  it('loads no node: module, fastify, memjs nor undici at import; undici on the first check', async () => {
    const { decision, atImport, atCheck } = await loadedModules(memgate.url, false);
    expect(decision).toMatchObject({ allowed: true, source: 'server' });
    expect(atImport.some((url) => url.endsWith('/dist/client/index.js'))).toBe(true);
    expect(atImport.some((url) => url.endsWith('/dist/shared/defaults.js'))).toBe(true);
    expect(atImport.filter((url) => url.startsWith('node:'))).toEqual([]);
    expect(atImport.filter((url) => url.includes('/node_modules/'))).toEqual([]);
    // Only the client and its share of the defaults (src/shared/defaults.ts).
    expect(atImport.filter((url) => !/\/dist\/(client\/[a-z-]+|shared\/defaults)\.js$/.test(url))).toEqual([]);
    // The hook sees modules loaded later too: undici, on the first request (its own
    // require()s of node: modules are CommonJS, which this hook does not see).
    expect(atCheck.some((url) => url.includes('/node_modules/undici/'))).toBe(true);
    expect([...atImport, ...atCheck].filter((url) => /\/(fastify|memjs)\//.test(url))).toEqual([]);
  });

  it('with a plain fetch, never loads undici', async () => {
    const { decision, atImport, atCheck } = await loadedModules(memgate.url, true);
    expect(decision).toMatchObject({ allowed: true, source: 'server' });
    expect([...atImport, ...atCheck].filter((url) => url.includes('undici') || url.startsWith('node:'))).toEqual([]);
  });
});

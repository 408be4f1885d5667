// The policy parse process (src/config/parse-apart.ts) started for real: memgate processes of its
// own, so an integration test, not a unit one.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { getPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULTS } from '../src/config/defaults.js';
import { EnvoyConfig, parseEnvoyTexts, readEnvoyFiles } from '../src/config/envoy-config.js';
import { PARSE_LIMITS, parseApart, START_PARSE_LIMITS } from '../src/config/parse-apart.js';
import { parsePolicyText, PolicyError, PolicySet } from '../src/config/policies.js';

const text = (path: string) => readFileSync(path, 'utf8');

/** Everything a value holds, maps as entries; a function by its text (a rebuilt matcher is another closure). */
const spelled = (value: unknown) =>
  JSON.stringify(value, (_key, inner: unknown) =>
    inner instanceof Map ? [...inner] : typeof inner === 'function' ? inner.toString() : inner,
  );

/** 10,000 overrides of one event, each of a limit of its own. */
function manyOverrides(count: number): string {
  const lines = ['events:', '  api:', '    limits: [{ limit: 100, window: 1m }]', '    overrides:'];
  for (let i = 0; i < count; i++)
    lines.push(`      - { match: { feature: "user-${i}" }, limits: [{ limit: ${i + 1}, window: 1m }] }`);
  return `${lines.join('\n')}\n`;
}

/** The parse processes this process has running (Linux /proc): their pids. */
function parseProcesses(): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (parent === process.pid && readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes('policy-parse-process'))
        found.push(Number(entry));
    } catch {
      // Ended while it was read.
    }
  }
  return found;
}

describe('parseApart', () => {
  it('answers what parsing in this process answers, as the same classes', async () => {
    const envoyFiles = await readEnvoyFiles('examples/envoy/ratelimit-config.yaml');
    for (const path of ['config/policies.yaml', 'docs/api-policies.yaml']) {
      const parsed = await parseApart({
        policies: { text: text(path), source: path },
        envoy: { files: envoyFiles, source: 'examples/envoy/ratelimit-config.yaml' },
      });
      expect(parsed.policies).toBeInstanceOf(PolicySet);
      expect(parsed.envoy).toBeInstanceOf(EnvoyConfig);
      expect(spelled(parsed.policies)).toBe(spelled(parsePolicyText(text(path), path)));
      expect(parsed.envoy).toEqual(parseEnvoyTexts(envoyFiles, 'examples/envoy/ratelimit-config.yaml'));
    }
  });

  it('parses a file of a few KiB here at start, with no process of its own, and apart while serving', async () => {
    const medium = manyOverrides(400);
    expect(medium.length).toBeGreaterThan(DEFAULTS.policyParseHereBytes);
    expect(medium.length).toBeLessThanOrEqual(DEFAULTS.policyParseHereAtStartBytes);
    const job = { policies: { text: medium, source: 'medium.yaml' } };
    // Parsed before parseApart returns: no process was started for it.
    const atStart = parseApart(job, START_PARSE_LIMITS);
    expect(parseProcesses()).toEqual([]);
    const whileServing = parseApart(job, PARSE_LIMITS);
    await expect.poll(parseProcesses, { timeout: 10_000 }).toHaveLength(1);
    expect(spelled((await atStart).policies)).toBe(spelled((await whileServing).policies));
    expect(spelled((await atStart).policies)).toBe(spelled(parsePolicyText(medium, 'medium.yaml')));
    await expect.poll(parseProcesses, { timeout: 5000 }).toEqual([]);
  });

  it('refuses an invalid file with every problem the parser finds', async () => {
    const broken = 'events:\n  api:\n    limits: [{ limit: 0, window: 1x }]\n';
    const here = (() => {
      try {
        parsePolicyText(broken, 'broken.yaml');
      } catch (error) {
        return error as PolicyError;
      }
    })();
    expect(here?.problems.length).toBeGreaterThan(0);
    await expect(parseApart({ policies: { text: broken, source: 'broken.yaml' } })).rejects.toEqual(here);
  });

  it('refuses a file that takes more memory or time than the parse process may, and is not hurt by it', async () => {
    const large = manyOverrides(10_000);
    await expect(
      parseApart(
        { policies: { text: large, source: 'large.yaml' } },
        { ...PARSE_LIMITS, heapMb: 16, deadlineMs: 60_000 },
      ),
    ).rejects.toThrow(/parsing took more than the 16 MiB it may; not used/);
    await expect(
      parseApart({ policies: { text: large, source: 'large.yaml' } }, { ...PARSE_LIMITS, heapMb: 512, deadlineMs: 50 }),
    ).rejects.toThrow(/not parsed within 50 ms; not used/);
    const parsed = await parseApart({ policies: { text: large, source: 'large.yaml' } });
    expect(parsed.policies.events.get('api')?.overrides).toHaveLength(10_000);
  }, 60_000);

  it('parses in a process below the service in priority, which is gone once it answers or is refused', async () => {
    const large = manyOverrides(10_000);
    const parsing = parseApart({ policies: { text: large, source: 'large.yaml' } });
    await expect.poll(parseProcesses, { timeout: 10_000 }).toHaveLength(1);
    const [pid] = parseProcesses();
    // Every thread of it, V8's helpers included: on Linux a priority is a thread's.
    const priorities = () =>
      readdirSync(`/proc/${pid}/task`).map((thread) => {
        try {
          return getPriority(Number(thread));
        } catch {
          return undefined; // Ended meanwhile.
        }
      });
    const lowered = Math.min(19, getPriority() + DEFAULTS.policyParseNice);
    await expect
      .poll(() => priorities().filter((priority) => priority !== undefined && priority !== lowered), { timeout: 5000 })
      .toEqual([]);
    expect(priorities().length).toBeGreaterThan(3);
    await parsing;
    await expect.poll(parseProcesses, { timeout: 5000 }).toEqual([]);
    // At start (niceBy 0) nothing is served yet: the parse keeps the service's priority.
    const atStart = parseApart({ policies: { text: large, source: 'large.yaml' } }, START_PARSE_LIMITS);
    await expect.poll(parseProcesses, { timeout: 10_000 }).toHaveLength(1);
    const [startPid] = parseProcesses();
    // The nice value it was told to take (its last argument), which it sets on every thread.
    const told = readFileSync(`/proc/${startPid}/cmdline`, 'utf8').split('\0').filter(Boolean).at(-1);
    expect(Number(told)).toBe(getPriority());
    await atStart;
    await expect.poll(parseProcesses, { timeout: 5000 }).toEqual([]);
    await expect(
      parseApart(
        { policies: { text: large, source: 'large.yaml' } },
        { ...PARSE_LIMITS, heapMb: 512, deadlineMs: 200 },
      ),
    ).rejects.toThrow(/not parsed within 200 ms/);
    await expect.poll(parseProcesses, { timeout: 5000 }).toEqual([]);
  }, 60_000);

  it('ends a parse under way when the process that started it exits, rather than let it run on', async () => {
    // A process that starts a parse of 20,000 overrides and exits in the middle of it: the
    // parse's pid, once it is past starting node (about 0.3 s of CPU), on its standard output.
    const file = join(mkdtempSync(join(tmpdir(), 'memgate-parse-')), 'large.yaml');
    // Two events of 10,000 overrides: the most a file may hold.
    writeFileSync(file, manyOverrides(10_000) + manyOverrides(10_000).replace('events:\n  api:', '  web:'));
    const script = `
      import { readFileSync } from 'node:fs';
      import { parseApart } from ${JSON.stringify(new URL('../src/config/parse-apart.ts', import.meta.url).href)};
      parseApart({ policies: { text: readFileSync(${JSON.stringify(file)}, 'utf8'), source: 'large.yaml' } }).catch(() => {});
      const cpu = (pid) => { const f = readFileSync('/proc/' + pid + '/stat', 'utf8').split(') ')[1].split(' '); return (Number(f[11]) + Number(f[12])) / 100; };
      setInterval(() => {
        const [child] = readFileSync('/proc/' + process.pid + '/task/' + process.pid + '/children', 'utf8').trim().split(' ').filter(Boolean);
        if (child && cpu(child) > 0.6) { process.stdout.write(child + '\\n'); process.exit(0); }
      }, 20);`;
    const starter = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    starter.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    expect(await new Promise((resolve) => starter.on('exit', resolve))).toBe(0);
    const parser = Number(output.trim());
    expect(parser).toBeGreaterThan(0);
    // Gone, or a zombie awaiting its reaping; left alone, it would parse on for a second or more.
    const ended = () => {
      try {
        return readFileSync(`/proc/${parser}/stat`, 'utf8').split(') ')[1]?.startsWith('Z') === true;
      } catch {
        return true;
      }
    };
    await expect.poll(ended, { timeout: 300, interval: 10 }).toBe(true);
  }, 60_000);
});

import { execFile, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { FLOORS, startFloor } from '../scripts/bench/grpc-floors.js';
import { MISREAD, runLeanGrpcLoad } from '../scripts/bench/lean-grpc.js';
import { featureSpread, oneFeature } from '../scripts/lib/run-load.js';
import { envoyConfigFile, startEnvoyService } from './helpers/envoy-service.js';
import { useMemcached } from './helpers/memcached.js';
import { inOneWindow, UNIT_SECONDS } from './helpers/window.js';

/** Starts one bench case's server process and returns its URL and a way to stop it. */
async function startCase(name: string, servers: string): Promise<{ url: string; stop: () => void }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/bench/server.ts', name, servers], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => {
      reject(new Error(`exited with ${String(code)}`));
    });
    child.stdout.once('data', (chunk: Buffer) => {
      resolve((JSON.parse(chunk.toString()) as { port: number }).port);
    });
  });
  return {
    url: `http://127.0.0.1:${port}`,
    stop: () => {
      child.removeAllListeners('exit');
      child.kill('SIGTERM');
    },
  };
}

describe('bench servers', () => {
  const memcached = useMemcached();

  it.each([
    ['floor', [200, 200, 200]],
    ['ceiling', [200, 200, 200]],
    ['peer', [200, 200, 200]],
    ['naive', [200, 200, 200]],
    ['memgate-60s', [200, 200, 200]],
    ['memgate-1d', [200, 200, 200]],
  ])('%s answers /check with %j', async (name, expected) => {
    const server = await startCase(name, memcached().servers);
    try {
      const statuses: number[] = [];
      while (statuses.length < expected.length)
        statuses.push((await fetch(`${server.url}/check?event=bench&feature=same-client`)).status);
      expect(statuses).toEqual(expected);
    } finally {
      server.stop();
    }
  });
});

describe('the grpc suite’s lean generator', () => {
  const memcached = useMemcached();

  it('reads memgate’s OK and OVER_LIMIT answers as a full decode does, and its refusals by gRPC status', async () => {
    const config = await envoyConfigFile(
      'domain: bench\ndescriptors:\n  - key: client\n    rate_limit: { unit: minute, requests_per_unit: 3 }\n',
    );
    const { service, client, address } = await startEnvoyService(memcached(), { config });
    client.close();
    try {
      const call = { address, descriptors: [[{ key: 'client', value: '%feature' }]], sessions: 1, verifyEvery: 1 };
      // Both counts hold within one minute (a fixed window): a run that met the minute's end is
      // run again, on clients of its own (what the first run counted after the turn stays counted).
      let attempts = 0;
      await inOneWindow(UNIT_SECONDS.MINUTE, async () => {
        const descriptors = [[{ key: 'client', value: `${String(++attempts)}-%feature` }]];
        // One call at a time: the first three are allowed, the rest over the limit.
        const one = await runLeanGrpcLoad({
          ...call,
          descriptors,
          domain: 'bench',
          connections: 1,
          requests: 10,
          nextFeature: oneFeature('lean'),
        });
        expect(one.codes).toEqual({ OK: 3, OVER_LIMIT: 7 });
        expect([one.requests, one.allowed, one.denied, one.errors]).toEqual([10, 3, 7, 0]);
        // Many features at once, each decoded whole as well: no answer read differently.
        const many = await runLeanGrpcLoad({
          ...call,
          descriptors,
          domain: 'bench',
          connections: 20,
          requests: 400,
          nextFeature: featureSpread('uniform:50', 1),
        });
        expect(many.requests).toBe(400);
        expect(many.allowed).toBeGreaterThanOrEqual(3);
        expect(many.allowed).toBeLessThanOrEqual(150);
        expect(many.allowed + many.denied).toBe(400);
        expect(many.failures).toEqual({});
      });
      // An empty domain is refused INVALID_ARGUMENT in a trailers-only answer.
      const refused = await runLeanGrpcLoad({
        ...call,
        domain: '',
        connections: 2,
        requests: 4,
        nextFeature: oneFeature('lean'),
      });
      expect([refused.requests, refused.errors]).toEqual([0, 4]);
      expect(refused.failures).toEqual({ INVALID_ARGUMENT: 4 });
      expect(refused.failureDetails.INVALID_ARGUMENT).toMatch(/domain/);
      expect(refused.failures[MISREAD]).toBeUndefined();
    } finally {
      await service.close();
    }
  });

  it.each(FLOORS)('gets the %s floor’s constant OK for every call', async (floor) => {
    const server = await startFloor(floor);
    try {
      const summary = await runLeanGrpcLoad({
        address: server.address,
        domain: 'bench',
        descriptors: [[{ key: 'client', value: '%feature' }]],
        connections: 10,
        sessions: 2,
        requests: 300,
        verifyEvery: 1,
        nextFeature: featureSpread('zipf:1000', 1),
      });
      expect(summary.codes).toEqual({ OK: 300 });
      expect(summary.errors).toBe(0);
    } finally {
      await server.stop();
    }
  });
});

describe('npm run bench', () => {
  it('leaves the docs alone without --write-docs, says how long it will take, and shows progress in lines off a terminal', async () => {
    const docs = await readFile('docs/performance.md', 'utf8');
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', 'scripts/bench.ts', '--suite', 'embedded'],
      {
        env: { ...process.env, CLI_PROGRESS_SECONDS: '1' },
      },
    );
    expect(stdout).toContain('| embedded store, in process, no HTTP |');
    const lines = stderr.split('\n').filter(Boolean);
    expect(lines[0]).toBe('bench: started, 0 s of about 30 s');
    expect(lines[1]).toMatch(/^\[0 s\] running embedded: about 30 s$/);
    // A line every second while it builds and measures, saying what it is doing: the build
    // takes under a second when dist/ is up to date, the measuring never does.
    const building = /^bench: \d+% \(.* of about 30 s\), building dist\/ \(npm run build\), \d+ s elapsed/;
    const measuring = /^bench: \d+% \(.*\), embedded: limiter\.check in process, /;
    // Between the build and the suite's first step, a tick names the suite alone (seen on a loaded host).
    const starting = /^bench: \d+% \(.*\), embedded, \d+ s elapsed/;
    const unexpected = lines.filter(
      (line, i) =>
        i >= 2 &&
        !building.test(line) &&
        !starting.test(line) &&
        !measuring.test(line) &&
        !/^\[|^bench: done/.test(line),
    );
    expect(unexpected).toEqual([]);
    expect(lines.some((line) => measuring.test(line))).toBe(true);
    // formatSeconds: `45 s`, `1 min`, `2 min 5 s` (a loaded host takes over a minute).
    expect(lines.at(-1)).toMatch(/^bench: done \(.*\) after (\d+ min)? ?(\d+ s)?$/);
    expect(stderr).not.toContain('\r');
    expect(stderr).not.toContain('\u001b[');
    expect(await readFile('docs/performance.md', 'utf8')).toBe(docs);
  }, 180_000);
});

/** The cells of a Markdown table's row, trimmed. */
const cells = (line: string) =>
  line
    .split('|')
    .slice(1, -1)
    .map((cell) => cell.trim());
const number = (cell: string | undefined) => Number((cell ?? '').replaceAll(',', '').replace(/×$/, ''));

describe('npm run bench -- --suite client', () => {
  const memcached = useMemcached();

  it('counts the checks of a denied feature that reach memgate, at the client and at memgate, and measures the allowed path four ways, and a caller alone two', async () => {
    const docs = await readFile('docs/performance.md', 'utf8');
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [
        '--import',
        'tsx',
        'scripts/bench.ts',
        '--suite',
        'client',
        '--duration',
        '3',
        '--rounds',
        '1',
        '--memcached',
        memcached().servers,
      ],
      { env: { ...process.env, CLI_PROGRESS_SECONDS: '1' } },
    );
    const lines = stdout.split('\n');

    // The denied feature: 100,000 checks, of which a few reached memgate, as many by the
    // client's count as by memgate's own metrics, within a retryAfter period each.
    const denied = lines.filter((line) => /^\|\s+1 \|/.test(line)).map(cells);
    expect(denied).toHaveLength(1);
    const [, seconds, spanned, reached, requests, sentAndDecided, local, localRate, target] = denied[0] ?? [];
    const [periods, retryAfter] = (spanned ?? '').split(' × ').map((part) => number(part.replace(/ s$/, '')));
    const [reachedDenied, reachedAllowed] = (reached ?? '').split(' + ').map(number);
    const [sent, decided] = (sentAndDecided ?? '').split(' / ').map(number);
    expect(number(seconds)).toBeGreaterThanOrEqual(3);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    const reachedAll = (reachedDenied ?? 0) + (reachedAllowed ?? 0);
    expect(reachedAll).toBeGreaterThanOrEqual(1);
    expect(reachedDenied).toBeLessThanOrEqual((periods ?? 0) + 1);
    expect(sent).toBe(reachedAll);
    expect(decided).toBe(reachedAll);
    expect(number(requests)).toBeGreaterThanOrEqual(1);
    expect(number(requests)).toBeLessThanOrEqual(reachedAll);
    expect(number(local) + reachedAll).toBe(100_000);
    expect(number(localRate)).toBeGreaterThan(0);
    expect(target).toBe('met');

    // The allowed path: every check allowed; memgate decides each one without leases (by its
    // metrics), batching carries them in fewer requests, leases take fewer decisions.
    const way = (what: string) => {
      const row = lines.find((line) => line.startsWith(`| ${what}`));
      expect(row, what).toBeDefined();
      const [, checksPerSecond, p50, p99, perThousandRequests, perThousandDecisions, memgateCpu, callerCpu, , odd] =
        cells(row ?? '');
      return {
        checksPerSecond: number(checksPerSecond),
        p50: number(p50),
        p99: number(p99),
        requests: number(perThousandRequests),
        decisions: number(perThousandDecisions),
        memgateCpu: number(memgateCpu),
        callerCpu: number(callerCpu),
        odd: number(odd),
      };
    };
    const single = way('one `POST /check` per call');
    const batched = way('batching, client defaults');
    const leased = way('leases, `leaseUnits: 10`');
    const singleAlone = way('one caller, 10 features: one `POST /check` per call');
    const leasedAlone = way('one caller, 10 features: leases');
    for (const figures of [single, batched, way('batching, `batchWindowMs: 1`'), leased, singleAlone, leasedAlone]) {
      expect(figures.checksPerSecond).toBeGreaterThan(0);
      expect(figures.p99).toBeGreaterThanOrEqual(figures.p50);
      expect(figures.memgateCpu).toBeGreaterThan(0);
      expect(figures.callerCpu).toBeGreaterThan(0);
      expect(figures.odd).toBe(0);
    }
    expect(single.requests).toBe(1000);
    expect(single.decisions).toBe(1000);
    expect(batched.decisions).toBe(1000);
    expect(batched.requests).toBeLessThan(500);
    expect(leased.decisions).toBeLessThan(500);
    // A caller alone has nothing to batch with: a request per check, unless it holds leases.
    expect(singleAlone.requests).toBe(1000);
    expect(leasedAlone.requests).toBeLessThan(500);
    expect(leasedAlone.decisions).toBeLessThan(500);
    expect(await readFile('docs/performance.md', 'utf8')).toBe(docs);
  }, 240_000);
});

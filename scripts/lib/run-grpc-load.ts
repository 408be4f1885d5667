// Drives Envoy's envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit with a real
// @grpc/grpc-js client, as Envoy's ratelimit filter calls it, and sums up throughput, latency,
// answers by code and failed calls by gRPC status. The HTTP /check counterpart is run-load.ts.
import { fileURLToPath } from 'node:url';
import { createHistogram, type RecordableHistogram } from 'node:perf_hooks';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { FeatureSpread, LoadFigures } from './run-load.js';

/** How long a call may wait for its answer before it fails DEADLINE_EXCEEDED (as the HTTP mode's timeout). */
export const CALL_DEADLINE_SECONDS = 10;

/** What a descriptor entry's value says to take from the feature spread, e.g. `remote_address=%feature`. */
export const FEATURE_PLACEHOLDER = '%feature';

const PROTO_DIR = fileURLToPath(new URL('../../proto/', import.meta.url));
const METHOD = '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit';

/** One descriptor as given on the command line: its entries in order; values may hold %feature. */
export type DescriptorTemplate = readonly { readonly key: string; readonly value: string }[];

export interface GrpcLoadOptions {
  /** The gRPC server to load, `host:port` (memgate's MEMGATE_GRPC_PORT). */
  readonly address: string;
  readonly domain: string;
  readonly descriptors: readonly DescriptorTemplate[];
  /** Calls in flight at once. */
  readonly connections: number;
  /** HTTP/2 connections the calls are spread over, round robin. */
  readonly channels: number;
  /** Seconds to run, unless `requests` is given. */
  readonly duration?: number;
  readonly requests?: number;
  /** The request's hits_addend (1 by default, which is what Envoy's unset 0 means). */
  readonly hitsAddend?: number;
  /** Whose request comes next: what %feature becomes. */
  readonly nextFeature: FeatureSpread;
  /** Called about once a second with how many calls have been answered or have failed so far. */
  readonly onTick?: (done: number) => void;
}

export interface GrpcLoadSummary extends LoadFigures {
  /** Answers by overall_code. */
  readonly codes: Readonly<Record<string, number>>;
  /** Calls that failed, by gRPC status name (UNAVAILABLE, INVALID_ARGUMENT, DEADLINE_EXCEEDED, …). */
  readonly failures: Readonly<Record<string, number>>;
  /** The first failure's details for each status in `failures`: the server's one-line reason. */
  readonly failureDetails: Readonly<Record<string, string>>;
}

/** Whether the value of some entry takes the feature spread. */
export const usesFeature = (descriptors: readonly DescriptorTemplate[]): boolean =>
  descriptors.some((entries) => entries.some(({ value }) => value.includes(FEATURE_PLACEHOLDER)));

let method: grpc.MethodDefinition<object, { overall_code: string }> | undefined;

/** ShouldRateLimit's (de)serializers, from the package's own proto/ folder, as the server uses. */
function shouldRateLimit(): grpc.MethodDefinition<object, { overall_code: string }> {
  const service = protoLoader.loadSync('envoy/service/ratelimit/v3/rls.proto', {
    includeDirs: [PROTO_DIR],
    keepCase: true,
    longs: Number,
    enums: String,
    defaults: true,
  })['envoy.service.ratelimit.v3.RateLimitService'] as unknown as Record<
    string,
    grpc.MethodDefinition<object, { overall_code: string }> | undefined
  >;
  method ??= service.ShouldRateLimit;
  if (!method) throw new Error('rls.proto has no ShouldRateLimit');
  return method;
}

/** Builds the encoded request for a feature; a request without %feature is encoded once. */
function requestEncoder(options: GrpcLoadOptions): () => Buffer {
  const { requestSerialize } = shouldRateLimit();
  const encode = (feature: string) =>
    requestSerialize({
      domain: options.domain,
      descriptors: options.descriptors.map((entries) => ({
        entries: entries.map(({ key, value }) => ({ key, value: value.replaceAll(FEATURE_PLACEHOLDER, feature) })),
      })),
      hits_addend: options.hitsAddend ?? 1,
    });
  if (!usesFeature(options.descriptors)) {
    const constant = encode('');
    return () => constant;
  }
  const { nextFeature } = options;
  if (nextFeature.constant !== undefined) {
    const constant = encode(nextFeature.constant);
    return () => constant;
  }
  return () => encode(nextFeature());
}

/**
 * A client per channel. grpc-js shares one connection between clients of the same target and
 * options unless each keeps a subchannel pool of its own.
 */
function openChannels(address: string, count: number): grpc.Client[] {
  return Array.from(
    { length: count },
    () =>
      new grpc.Client(address, grpc.credentials.createInsecure(), {
        'grpc.use_local_subchannel_pool': 1,
      }),
  );
}

/** Drives ShouldRateLimit with `connections` calls in flight until the duration or request count is done. */
export async function runGrpcLoad(options: GrpcLoadOptions): Promise<GrpcLoadSummary> {
  const { responseDeserialize } = shouldRateLimit();
  const nextRequest = requestEncoder(options);
  const clients = openChannels(options.address, options.channels);
  const histogram = createHistogram();
  const codes: Record<string, number> = {};
  const failures: Record<string, number> = {};
  const failureDetails: Record<string, string> = {};
  const counted = { started: 0, answered: 0, failed: 0 };
  const started = performance.now();
  const endsAt = options.requests === undefined ? started + (options.duration ?? 10) * 1000 : Infinity;
  const more = () => (options.requests === undefined ? performance.now() < endsAt : counted.started < options.requests);

  const call = (client: grpc.Client) =>
    new Promise<void>((resolve) => {
      const sent = performance.now();
      client.makeUnaryRequest(
        METHOD,
        (bytes: Buffer) => bytes,
        responseDeserialize,
        nextRequest(),
        { deadline: Date.now() + CALL_DEADLINE_SECONDS * 1000 },
        (error, reply) => {
          // Whole microseconds: the histogram takes integers of at least 1.
          histogram.record(Math.max(1, Math.round((performance.now() - sent) * 1000)));
          if (error) {
            // A code grpc-js has no name for is shown as its number.
            const status = (grpc.status[error.code] as string | undefined) ?? String(error.code);
            failures[status] = (failures[status] ?? 0) + 1;
            failureDetails[status] ??= error.details;
            counted.failed++;
          } else {
            const code = reply?.overall_code ?? 'UNKNOWN';
            codes[code] = (codes[code] ?? 0) + 1;
            counted.answered++;
          }
          resolve();
        },
      );
    });

  const worker = async (index: number) => {
    const client = clients[index % clients.length] as grpc.Client;
    while (more()) {
      counted.started++;
      await call(client);
    }
  };

  const ticker = options.onTick
    ? setInterval(() => options.onTick?.(counted.answered + counted.failed), 1000)
    : undefined;
  try {
    await Promise.all(Array.from({ length: options.connections }, (_, i) => worker(i)));
  } finally {
    clearInterval(ticker);
    for (const client of clients) client.close();
  }
  // The last tick tells the end, which the timer may not have reached.
  options.onTick?.(counted.answered + counted.failed);
  return loadSummary({ started, histogram, codes, counted, failures, failureDetails });
}

/** What a gRPC load run counted, as it goes. */
export interface LoadCounts {
  /** performance.now() when the first call went out. */
  readonly started: number;
  /** Each answered call's latency, in whole microseconds. */
  readonly histogram: RecordableHistogram;
  /** Answers by overall_code. */
  readonly codes: Record<string, number>;
  readonly counted: { readonly answered: number; readonly failed: number };
  readonly failures: GrpcLoadSummary['failures'];
  readonly failureDetails: GrpcLoadSummary['failureDetails'];
}

/** The summary of a run, the same for the grpc-js client and the bench's lean generator. */
export function loadSummary({
  started,
  histogram,
  codes,
  counted,
  failures,
  failureDetails,
}: LoadCounts): GrpcLoadSummary {
  const seconds = Math.round(performance.now() - started) / 1000;
  const ms = (micros: number) => Math.round(micros / 10) / 100;
  const done = counted.answered + counted.failed;
  const allowed = codes.OK ?? 0;
  const denied = codes.OVER_LIMIT ?? 0;
  return {
    seconds,
    requests: counted.answered,
    throughput: Math.round(counted.answered / seconds),
    latencyMs:
      done === 0
        ? { p50: 0, p90: 0, p99: 0, max: 0 }
        : {
            p50: ms(histogram.percentile(50)),
            p90: ms(histogram.percentile(90)),
            p99: ms(histogram.percentile(99)),
            max: ms(histogram.max),
          },
    allowed,
    denied,
    errors: counted.failed + counted.answered - allowed - denied,
    codes,
    failures,
    failureDetails,
  };
}

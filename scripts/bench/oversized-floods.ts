// The floods of scripts/bench/oversized.ts: the largest requests memgate refuses, and the
// sender that sends one of them over and over from its own process. The sender runs apart from
// the probe so that building and writing a megabyte never delays the probe's own event loop:
// what the table shows is memgate's delay, not the bench's.
import { connect, type ClientHttp2Session } from 'node:http2';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { grpcFrame, rateLimitMessages, SHOULD_RATE_LIMIT_PATH } from './lean-grpc.js';

/**
 * The flood's pace: one client sending one request after another, this many a second (the
 * outside tester's stream sent 4 to 6 a second of its largest requests).
 */
export const FLOOD_PER_SECOND = 20;

export interface Flood {
  readonly name: string;
  /** What memgate answers it, as the table says. */
  readonly answer: string;
  readonly send: (targets: Targets) => Promise<string>;
}

export interface Targets {
  /** memgate's HTTP address. */
  readonly url: URL;
  readonly http: Agent;
  /** The HTTP/2 connection to the gRPC port, opened again when memgate closes it. */
  grpc(): ClientHttp2Session;
}

function encodedRequest(descriptors: { key: string; value: string }[][]): Buffer {
  const { request: type } = rateLimitMessages();
  const message = type.fromObject({ domain: 'edge', descriptors: descriptors.map((entries) => ({ entries })) });
  return grpcFrame(type.encode(message).finish());
}

/** A gRPC call of `frame`; resolves with its grpc-status. */
function grpcCall(session: ClientHttp2Session, frame: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const stream = session.request({
      ':method': 'POST',
      ':path': SHOULD_RATE_LIMIT_PATH,
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    let status = '';
    stream.on('response', (headers) => {
      status = String(headers['grpc-status'] ?? status);
    });
    stream.on('trailers', (trailers: Record<string, string | undefined>) => {
      status = trailers['grpc-status'] ?? status;
    });
    stream.on('data', () => undefined);
    stream.on('end', () => {
      resolve(`grpc-status ${status}`);
    });
    stream.on('error', reject);
    stream.end(frame);
  });
}

async function httpCall(targets: Targets, path: string, body: Buffer): Promise<string> {
  const response = await request(new URL(path, targets.url), {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json' },
    dispatcher: targets.http,
  }).catch((error: unknown) => ({ statusCode: (error as Error).message, body: undefined }));
  await response.body?.dump();
  return `HTTP ${String(response.statusCode)}`;
}

/** Built when the suite runs: encoding 110,000 descriptors takes a moment. */
export function buildFloods(): Flood[] {
  // As many descriptors as fit in the 64 KB a message may be.
  const tinyDescriptors = encodedRequest(Array.from({ length: 7000 }, () => [{ key: 'a', value: '' }]));
  const bigMessage = encodedRequest(Array.from({ length: 110_000 }, () => [{ key: 'a', value: 'b' }]));
  // Each as large as a batch may be (256 KB), but the last, which is over it.
  const nestedBatch = Buffer.from(`${'['.repeat(125_000)}${']'.repeat(125_000)}`);
  const overLimitBatch = Buffer.from(`[${'['.repeat(700_000)}${']'.repeat(700_000)}]`);
  const manyValues = Buffer.from(JSON.stringify(Array(100_000).fill(0)));
  // 100 checks, each feature 1,100 quotes (2.2 KB escaped): parsed, then each refused.
  const longFeatures = Buffer.from(
    JSON.stringify(Array.from({ length: 100 }, () => ({ event: 'api', feature: '"'.repeat(1100) }))),
  );

  return [
    {
      name: `gRPC, ${Math.round(tinyDescriptors.length / 1024)} KB: 7,000 descriptors`,
      answer: 'INVALID_ARGUMENT',
      send: (t) => grpcCall(t.grpc(), tinyDescriptors),
    },
    {
      name: `gRPC, ${Math.round(bigMessage.length / 1024)} KB: 110,000 descriptors`,
      answer: 'RESOURCE_EXHAUSTED',
      send: (t) => grpcCall(t.grpc(), bigMessage),
    },
    {
      name: `/check/batch, ${Math.round(nestedBatch.length / 1024)} KB of nested arrays`,
      answer: '400 invalid_request',
      send: (t) => httpCall(t, '/check/batch', nestedBatch),
    },
    {
      name: `/check/batch, ${Math.round(manyValues.length / 1024)} KB: 100,000 values`,
      answer: '413',
      send: (t) => httpCall(t, '/check/batch', manyValues),
    },
    {
      name: `/check/batch, ${Math.round(longFeatures.length / 1024)} KB: 100 features over 1 KB`,
      answer: '200, each item feature_too_long',
      send: (t) => httpCall(t, '/check/batch', longFeatures),
    },
    {
      name: `/check/batch, ${Math.round(overLimitBatch.length / 1024)} KB`,
      answer: '413',
      send: (t) => httpCall(t, '/check/batch', overLimitBatch),
    },
  ];
}

/** What the bench asks of the sender: flood with `floods[index]` for `seconds`. */
export interface FloodOrder {
  readonly index: number;
  readonly seconds: number;
}

/** What the sender says: first the floods it holds, then after each order what it sent. */
export type SenderMessage =
  | { readonly ready: readonly { readonly name: string; readonly answer: string }[] }
  | { readonly sent: number; readonly answers: Record<string, number> };

/** Run as a child process (argv: memgate's HTTP URL, its gRPC address); orders come by IPC. */
function serveOrders(url: URL, grpcAddress: string): void {
  const floods = buildFloods();
  const http = new Agent({ connections: 1 });
  let session: ClientHttp2Session | undefined;
  const targets: Targets = {
    url,
    http,
    grpc: () => {
      if (session === undefined || session.closed || session.destroyed) {
        session = connect(`http://${grpcAddress}`);
        session.on('error', () => undefined);
      }
      return session;
    },
  };
  const reply = (message: SenderMessage) => process.send?.(message);
  process.on('message', (order: FloodOrder) => {
    void (async () => {
      const flood = floods[order.index];
      const answers: Record<string, number> = {};
      let sent = 0;
      const deadline = performance.now() + order.seconds * 1000;
      for (let next = performance.now(); flood && next < deadline; next += 1000 / FLOOD_PER_SECOND) {
        await sleep(Math.max(0, next - performance.now()));
        const answer = await flood.send(targets).catch((error: unknown) => (error as Error).message);
        answers[answer] = (answers[answer] ?? 0) + 1;
        sent++;
      }
      reply({ sent, answers });
    })();
  });
  process.once('disconnect', () => {
    session?.close();
    void http.close();
  });
  reply({ ready: floods.map(({ name, answer }) => ({ name, answer })) });
}

if (process.send && process.argv[2] && process.argv[3]) {
  serveOrders(new URL(process.argv[2]), process.argv[3]);
}

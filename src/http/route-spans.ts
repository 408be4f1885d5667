// A server span per request of the decision routes, when tracing is on: opened as the request
// arrives (parented by its traceparent), active while its handler runs (the store's spans are its
// children), ended with the answer's status. Off, routes take UNTRACED: no hook, the handler as it is.
import { context, SpanKind, trace, type Span, type Tracer } from '@opentelemetry/api';
import type {
  FastifyReply,
  FastifyRequest,
  onErrorHookHandler,
  onRequestAbortHookHandler,
  onRequestHookHandler,
  onResponseHookHandler,
} from 'fastify';
import type { Decision } from '../counting/decision.js';
import { describeActiveSpan, failed, parentOf } from '../tracing/spans.js';

export interface RouteSpans {
  /** The route's hooks (spread into its options): none when untraced. */
  readonly hooks: {
    readonly onRequest?: onRequestHookHandler;
    readonly onError?: onErrorHookHandler;
    readonly onResponse?: onResponseHookHandler;
    readonly onRequestAbort?: onRequestAbortHookHandler;
  };
  /** The route's handler, run with its request's span active. */
  wrap<H extends (...args: never[]) => unknown>(handler: H): H;
  /** Puts a decision on the span of the request in progress; absent when untraced. */
  readonly describe?: (event: string | undefined, decision: Decision) => void;
}

type Handler = (this: unknown, request: FastifyRequest, reply: FastifyReply) => unknown;

export const UNTRACED: RouteSpans = { hooks: {}, wrap: (handler) => handler };

export function routeSpans(tracer: Tracer): RouteSpans {
  const spans = new WeakMap<FastifyRequest, Span>();
  const errors = new WeakMap<FastifyRequest, Error>();
  /** A request's span, once: whichever of its answer and its abort comes first ends it. */
  const taken = (request: FastifyRequest) => {
    const span = spans.get(request);
    spans.delete(request);
    return span;
  };
  return {
    hooks: {
      onRequest: (request, _reply, done) => {
        const route = request.routeOptions.url ?? request.url;
        const span = tracer.startSpan(
          `${request.method} ${route}`,
          { kind: SpanKind.SERVER, attributes: { 'http.request.method': request.method, 'http.route': route } },
          parentOf(request.headers),
        );
        spans.set(request, span);
        done();
      },
      // Errors are the error handler's to answer; the one a 5xx came from is kept for its span.
      onError: (request, _reply, error, done) => {
        errors.set(request, error);
        done();
      },
      onResponse: (request, reply, done) => {
        const span = taken(request);
        if (span) {
          span.setAttribute('http.response.status_code', reply.statusCode);
          // A refusal (4xx) is the caller's; memgate failed only when it answers 5xx.
          if (reply.statusCode >= 500) {
            span.setAttribute('error.type', String(reply.statusCode));
            failed(span, errors.get(request) ?? `answered ${reply.statusCode}`);
          }
          span.end();
        }
        done();
      },
      onRequestAbort: (request, done) => {
        const span = taken(request);
        span?.setAttribute('memgate.aborted', true);
        span?.end();
        done();
      },
    },
    wrap: <H extends (...args: never[]) => unknown>(handler: H): H => {
      const run = handler as unknown as Handler;
      return function (this: unknown, request: FastifyRequest, reply: FastifyReply) {
        const span = spans.get(request);
        if (!span) return run.call(this, request, reply);
        return context.with(trace.setSpan(context.active(), span), run, this, request, reply);
      } as unknown as H;
    },
    describe: describeActiveSpan,
  };
}

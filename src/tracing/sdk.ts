// The OpenTelemetry SDK as memgate starts it when its settings turn tracing on: the only module
// that imports the SDK, itself imported only then (tracing.ts), so that a memgate that does not
// trace loads none of it. Each setting is memgate's reading of OpenTelemetry's variables
// (config/settings.ts); what memgate does not read (the exporter's headers, timeout and
// certificates, the batching) the SDK reads from the environment itself.
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { context, diag, DiagLogLevel, propagation, trace, type DiagLogger, type Tracer } from '@opentelemetry/api';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  NodeTracerProvider,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type Sampler,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-node';
import { DEFAULTS } from '../config/defaults.js';
import type { TracingExport, TracingSampler, TracingService } from '../config/settings.js';
import { VERSION } from '../config/version.js';
import { TRACER_NAME } from './tracing.js';

export interface SdkOptions {
  readonly export: TracingExport;
  readonly sampler: TracingSampler;
  readonly service: TracingService;
  readonly diagLogger?: DiagLogger;
}

export interface StartedSdk {
  readonly tracer: Tracer;
  /** Sends what is held (within DEFAULTS.tracingFlushMs) and unregisters; false when spans were dropped. */
  close(): Promise<boolean>;
}

/** A provider registered with @opentelemetry/api, batching spans to the OTLP exporter the settings name. */
export async function startSdk(options: SdkOptions): Promise<StartedSdk> {
  if (options.diagLogger) diag.setLogger(options.diagLogger, DiagLogLevel.WARN);
  const { attributes, serviceName } = options.service;
  const resource = defaultResource().merge(
    resourceFromAttributes({
      ...attributes,
      'service.name': serviceName,
      'service.version': VERSION,
      // As upstream: instances are told apart, a new id for each process unless the operator names it.
      'service.instance.id': attributes['service.instance.id'] ?? randomUUID(),
      'host.name': attributes['host.name'] ?? hostname(),
      'process.pid': process.pid,
    }),
  );
  const provider = new NodeTracerProvider({
    resource,
    sampler: samplerOf(options.sampler),
    spanProcessors: [new BatchSpanProcessor(await exporterOf(options.export))],
  });
  const { propagators } = options.export;
  provider.register({
    propagator:
      propagators.length === 0
        ? null
        : new CompositePropagator({
            propagators: propagators.map((name) =>
              name === 'tracecontext' ? new W3CTraceContextPropagator() : new W3CBaggagePropagator(),
            ),
          }),
  });
  return {
    tracer: provider.getTracer(TRACER_NAME, VERSION),
    close: async () => {
      const flushed = await Promise.race([
        provider.shutdown().then(
          () => true,
          () => false,
        ),
        sleep(DEFAULTS.tracingFlushMs, false, { ref: false }),
      ]);
      // The process's global state as it was: another service started in it begins anew.
      trace.disable();
      context.disable();
      propagation.disable();
      if (options.diagLogger) diag.disable();
      return flushed;
    },
  };
}

/** Only the exporter of the protocol in use is loaded (the gRPC one brings its own client code). */
async function exporterOf({ protocol, url }: TracingExport): Promise<SpanExporter> {
  if (protocol === 'grpc')
    return new (await import('@opentelemetry/exporter-trace-otlp-grpc')).OTLPTraceExporter({ url });
  if (protocol === 'http/json')
    return new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter({ url });
  return new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter({ url });
}

/** OTEL_TRACES_SAMPLER as OpenTelemetry names them. */
function samplerOf({ name, ratio }: TracingSampler): Sampler {
  const root = name.endsWith('always_on')
    ? new AlwaysOnSampler()
    : name.endsWith('always_off')
      ? new AlwaysOffSampler()
      : new TraceIdRatioBasedSampler(ratio);
  return name.startsWith('parentbased_') ? new ParentBasedSampler({ root }) : root;
}

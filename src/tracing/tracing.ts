// Whether memgate traces, and with what: the tracer provider the process registered itself, the
// OpenTelemetry SDK started from the settings (sdk.ts, imported only then), or nothing. Off, the
// tracer is undefined and nothing of tracing is wired into a request's path.
import { ProxyTracer, trace, type DiagLogger, type Tracer } from '@opentelemetry/api';
import type { Settings } from '../config/settings.js';
import { VERSION } from '../config/version.js';

/** The instrumentation scope of memgate's spans. */
export const TRACER_NAME = 'memgate';

export interface Tracing {
  /** The tracer of memgate's spans; undefined when tracing is off. */
  readonly tracer: Tracer | undefined;
  /** For the start-up line: `off`, where spans are sent, or the process's own provider. */
  readonly description: string;
  /**
   * Sends the spans still held, within `DEFAULTS.tracingFlushMs`, and stops the SDK memgate
   * started; the process's own provider is left as it is. Resolves false when spans were dropped.
   */
  close(): Promise<boolean>;
}

export type TracingSettings = Pick<Settings, 'tracing' | 'tracingSampler' | 'tracingService'>;

export interface TracingOptions {
  /** Where the SDK's own complaints go (an export that failed): only for the SDK memgate starts. */
  readonly diagLogger?: DiagLogger;
}

const OFF: Tracing = { tracer: undefined, description: 'off', close: () => Promise.resolve(true) };

/**
 * Whether a tracer provider is registered with @opentelemetry/api (by the operator's own
 * set-up, loaded before memgate): without one, the API hands out a ProxyTracer that waits
 * for a provider; with one, that provider's own tracer.
 */
export function providerRegistered(): boolean {
  return !(trace.getTracer(TRACER_NAME) instanceof ProxyTracer);
}

/** Tracing as the settings and the process ask; the SDK is imported only when memgate starts it. */
export async function startTracing(settings: TracingSettings, options: TracingOptions = {}): Promise<Tracing> {
  if (providerRegistered()) {
    return {
      tracer: trace.getTracer(TRACER_NAME, VERSION),
      description: "the process's own tracer provider",
      close: () => Promise.resolve(true),
    };
  }
  if (!settings.tracing) return OFF;
  const { startSdk } = await import('./sdk.js');
  const sdk = await startSdk({
    export: settings.tracing,
    sampler: settings.tracingSampler,
    service: settings.tracingService,
    ...(options.diagLogger ? { diagLogger: options.diagLogger } : {}),
  });
  return {
    tracer: sdk.tracer,
    description: `OTLP ${settings.tracing.protocol} to ${settings.tracing.url}`,
    close: () => sdk.close(),
  };
}

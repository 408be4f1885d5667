// What memgate's spans say, for every surface: a decision's attributes, the parent a request
// brings, and a failure. Used only where tracing is on (tracing.ts); nothing here runs otherwise.
import {
  context,
  propagation,
  SpanStatusCode,
  trace,
  type Context,
  type Span,
  type TextMapGetter,
} from '@opentelemetry/api';
import type { Decision } from '../shared/decision.js';

/** The attributes memgate adds, beside OpenTelemetry's own (http.*, rpc.*, db.*). */
export const ATTRIBUTES = {
  /** `allowed` or `denied`: what the caller was answered. */
  decision: 'memgate.decision',
  event: 'memgate.event',
  /** The names of the limits the decision reports (enforced ones; Envoy's: one per descriptor, `""` where none). */
  limits: 'memgate.limits',
  /** Decided by onStoreError, without the store's counts. */
  degraded: 'memgate.degraded',
  policyVersion: 'memgate.policy_version',
  /** `allow` or `deny`: a list held the client. */
  listed: 'memgate.listed',
  /** The shadow limits that would have refused. */
  shadowDenied: 'memgate.shadow_denied',
  domain: 'memgate.envoy.domain',
  descriptors: 'memgate.envoy.descriptors',
} as const;

/** A decision of `event` on its span. */
export function describeDecision(span: Span, event: string | undefined, decision: Decision): void {
  span.setAttribute(ATTRIBUTES.decision, decision.allowed ? 'allowed' : 'denied');
  if (event !== undefined) span.setAttribute(ATTRIBUTES.event, event);
  span.setAttribute(
    ATTRIBUTES.limits,
    decision.limits.map(({ name }) => name),
  );
  span.setAttribute(ATTRIBUTES.degraded, decision.degraded === true);
  if (decision.policyVersion !== undefined) span.setAttribute(ATTRIBUTES.policyVersion, decision.policyVersion);
  if (decision.listed !== undefined) span.setAttribute(ATTRIBUTES.listed, decision.listed);
  if (decision.shadowDenied !== undefined) span.setAttribute(ATTRIBUTES.shadowDenied, [...decision.shadowDenied]);
}

/** The decision on the span of the request in progress, if it has one. */
export function describeActiveSpan(event: string | undefined, decision: Decision): void {
  const span = trace.getActiveSpan();
  if (span) describeDecision(span, event, decision);
}

/** memgate failed: the span says so, with the error. */
export function failed(span: Span, error: unknown): void {
  span.recordException(error instanceof Error ? error : String(error));
  span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
}

/**
 * The parent of a request's span: the span already active (a framework's own instrumentation
 * in the operator's set-up), else what the request's headers carry (`traceparent`).
 */
export function parentOf<Carrier>(carrier: Carrier | undefined, getter?: TextMapGetter<Carrier>): Context {
  const active = context.active();
  if (carrier === undefined || trace.getSpan(active) !== undefined) return active;
  return propagation.extract(active, carrier, getter);
}

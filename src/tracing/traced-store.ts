// A counter store whose calls are spans, children of the request's span (the context the
// limiter calls in): put in place of the store only when tracing is on, so that an untraced
// memgate's calls reach the store as they always did.
import { SpanKind, type Attributes, type Tracer } from '@opentelemetry/api';
import type { CounterStore } from '../store/counter-store.js';
import { failed } from './spans.js';

/** `store` with each call that counts or reads a span; health, ping and close as they are. */
export function tracedStore(store: CounterStore, tracer: Tracer): CounterStore {
  // Memcached is a database as OpenTelemetry names them; the embedded store is this process.
  const remote = store.kind === 'memcached';
  const call = <T>(operation: string, attributes: Attributes, work: () => Promise<T>): Promise<T> =>
    tracer.startActiveSpan(
      `${store.kind} ${operation}`,
      {
        kind: remote ? SpanKind.CLIENT : SpanKind.INTERNAL,
        attributes: {
          ...(remote ? { 'db.system.name': 'memcached' } : {}),
          'db.operation.name': operation,
          ...attributes,
        },
      },
      async (span) => {
        try {
          return await work();
        } catch (error) {
          failed(span, error);
          throw error;
        } finally {
          span.end();
        }
      },
    );
  return {
    kind: store.kind,
    shared: store.shared,
    description: store.description,
    ...(store.clock ? { clock: store.clock } : {}),
    incrementAndRead: (increments, reads, options) =>
      call(
        'incrementAndRead',
        { 'memgate.store.increments': increments.length, 'memgate.store.reads': reads.length },
        () => store.incrementAndRead(increments, reads, options),
      ),
    decrement: (decrements) =>
      call('decrement', { 'memgate.store.decrements': decrements.length }, () => store.decrement(decrements)),
    reset: (marker, deletes) =>
      call('reset', { 'memgate.store.deletes': deletes.length }, () => store.reset(marker, deletes)),
    readVersioned: (key) => call('readVersioned', {}, () => store.readVersioned(key)),
    swap: (key, value, ttlSeconds, expected) => call('swap', {}, () => store.swap(key, value, ttlSeconds, expected)),
    remove: (key, expected) => call('remove', {}, () => store.remove(key, expected)),
    ping: () => store.ping(),
    health: () => store.health(),
    close: () => store.close(),
  };
}

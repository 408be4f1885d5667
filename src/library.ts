// memgate's library: the limiter, its stores, its policies and the plan and decision types,
// free of any server. It ships alone as memgate-limiter (packages/limiter, built from this
// entry and what it imports): src/library-boundary.test.ts holds it to that package's
// dependencies, and memgate's own entry (index.ts) adds the HTTP app to it.
export { createLimiter } from './counting/limiter.js';
export { MAX_FEATURE_BYTES } from './counting/resolve.js';
export type { CheckRequest } from './counting/resolve.js';
export type {
  Limiter,
  LimiterOptions,
  Released,
  ReleaseRequest,
  TogetherCheck,
  TogetherDecision,
} from './counting/limiter.js';
export type { Decision, LimitStatus } from './counting/decision.js';
export { LimiterInputError } from './counting/errors.js';
export type { InputErrorCode } from './counting/errors.js';
export { loadPolicyFile, parsePolicies, parsePolicyText, PolicyError, PolicySet } from './config/policies.js';
export type { Algorithm, Edge, EventPolicy, LimitPolicy, OnStoreError } from './config/policies.js';
export { StoreOverloadedError, StoreUnavailableError } from './store/counter-store.js';
export type {
  CounterStore,
  CounterIncrement,
  CounterDecrement,
  IncrementAndReadResult,
  ServerHealth,
  StoreVersion,
  VersionedValue,
} from './store/counter-store.js';
export { createEmbeddedStore } from './store/embedded-store.js';
export type { EmbeddedStoreOptions } from './store/embedded-store.js';
export { createMemcachedStore } from './store/memcached/memcached-store.js';
export type { MemcachedStoreOptions, StoreLogger } from './store/memcached/memcached-store.js';

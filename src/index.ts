// memgate as a library: the limiter, its stores and its policy parser (library.ts, which
// memgate-limiter carries alone), and the fastify app that serves them.
export * from './library.js';
export { buildApp } from './http/app.js';
export type { AppOptions } from './http/app.js';

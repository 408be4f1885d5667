// The contract's answers are checked, not trusted: with validateResponses (as the HTTP tests
// build the app), a route whose answer and schema disagree answers 500 naming the field,
// where fastify's serializer alone would drop an unnamed field or send a wrong type.
import { afterAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { parsePolicies } from '../config/policies.js';
import { createLimiter, type Limiter } from '../counting/limiter.js';
import type { CheckRequest, Decision } from '../shared/contract.js';
import { createEmbeddedStore } from '../store/embedded-store.js';
import { buildApp } from './app.js';
import { closedAnswer } from './response-check.js';

const POLICIES = parsePolicies({ events: { login: { limits: [{ name: 'per-minute', limit: 5, window: '1m' }] } } });

/** A limiter whose checks answer what `change` makes of each true decision. */
function changedAnswers(change: (decision: Decision) => unknown): Limiter {
  const limiter = createLimiter({ policies: POLICIES, store: createEmbeddedStore() });
  return new Proxy(limiter, {
    get(target, key, receiver) {
      if (key !== 'current') return Reflect.get(target, key, receiver) as unknown;
      return () =>
        new Proxy(target.current(), {
          get(snapshot, name, inner) {
            if (name !== 'check') return Reflect.get(snapshot, name, inner) as unknown;
            return async (request: CheckRequest) => change(await snapshot.check(request));
          },
        });
    },
  });
}

/** What the limiter's checks answer, made of each true decision: each ask sets it. */
let change: (decision: Decision) => unknown = (decision) => decision;
const limiter = changedAnswers((decision) => change(decision));
/**
 * One app with its answers checked and one without, each built when first asked and kept for
 * the file: building an app (its routes' schemas compiled) took most of this file's time, and
 * the five asks built five.
 */
const apps = new Map<boolean, FastifyInstance>();
afterAll(async () => {
  for (const app of apps.values()) await app.close();
});
let asked = 0;

async function ask(answer: (decision: Decision) => unknown, validateResponses: boolean) {
  change = answer;
  let app = apps.get(validateResponses);
  if (!app) {
    app = buildApp({ limiter, store: createEmbeddedStore(), maxEventLoopDelayMs: 0, validateResponses });
    apps.set(validateResponses, app);
  }
  // A client of its own each time, so no ask counts against another's limit.
  const payload = { event: 'login', feature: `a${++asked}` };
  const answered = await app.inject({ method: 'POST', url: '/check', payload });
  return { status: answered.statusCode, body: answered.json<Record<string, unknown>>() };
}

describe('answers checked against their schemas', () => {
  it('passes an answer that fits', async () => {
    const { status, body } = await ask((decision) => decision, true);
    expect(status).toBe(200);
    expect(body.allowed).toBe(true);
  });

  it('refuses a field the schema does not name, which the serializer alone drops unseen', async () => {
    const extra = (decision: Decision) => ({ ...decision, retryAt: 5 });
    const checked = await ask(extra, true);
    expect(checked.status).toBe(500);
    expect(checked.body).toMatchObject({ error: { code: 'internal_error' } });
    expect(JSON.stringify(checked.body)).toContain('must NOT have additional properties');
    const unchecked = await ask(extra, false);
    expect(unchecked.status).toBe(200);
    expect(unchecked.body).not.toHaveProperty('retryAt');
  });

  it('refuses a field of the wrong type', async () => {
    const wrongType = await ask((decision) => ({ ...decision, allowed: 'yes' }), true);
    expect(wrongType.status).toBe(500);
    expect(JSON.stringify(wrongType.body)).toContain('response/allowed must be boolean');
    const otherField = await ask((decision) => ({ ...decision, policyVersion: 7 }), true);
    expect(otherField.status).toBe(500);
    expect(JSON.stringify(otherField.body)).toContain('response/policyVersion must be string');
  });
});

describe('closedAnswer', () => {
  it('closes every object, keeps examples as data and leaves out what only the document reads', () => {
    const schema = {
      type: 'object',
      properties: { a: { type: 'object', properties: { b: { type: 'string' } } } },
      examples: [{ a: { b: 'x', properties: 1 } }],
      'x-examples': { one: {} },
      headers: { RateLimit: { type: 'string' } },
    };
    expect(closedAnswer(schema)).toEqual({
      type: 'object',
      properties: { a: { type: 'object', properties: { b: { type: 'string' } }, additionalProperties: false } },
      examples: [{ a: { b: 'x', properties: 1 } }],
      additionalProperties: false,
    });
  });
});

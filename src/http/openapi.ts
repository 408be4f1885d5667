/**
 * The OpenAPI document served at /docs/json (and browsable at /docs): built by
 * @fastify/swagger from every route's schema (schemas.ts); this module holds what belongs
 * to the document as a whole.
 */
import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';

/** The path item fields that hold an operation in OpenAPI 3.0, in the order the document lists them. */
const OPENAPI_METHODS = ['get', 'post', 'put', 'patch', 'delete', 'head', 'options', 'trace'];

type PathItem = Record<string, unknown>;
interface Operation {
  responses?: Record<string, object>;
}

/**
 * Only the operations OpenAPI 3.0 can name: fastify lists every method a route answers
 * (/gate answers PROPFIND, PURGE, ...), which makes the document invalid; the routes that
 * answer more methods say so in their description. HEAD answers carry no body.
 */
function openApiOperationsOnly(item: PathItem): PathItem {
  const kept: PathItem = {};
  for (const method of OPENAPI_METHODS) {
    if (item[method] !== undefined) kept[method] = method === 'head' ? withoutBodies(item[method] as Operation) : item[method];
  }
  return kept;
}

function withoutBodies(operation: Operation): Operation {
  const bodiless = (response: object) => Object.fromEntries(Object.entries(response).filter(([field]) => field !== 'content'));
  return { ...operation, responses: Object.fromEntries(Object.entries(operation.responses ?? {}).map(([status, response]) => [status, bodiless(response)])) };
}

export const openapiOptions: FastifyDynamicSwaggerOptions = {
  openapi: {
    openapi: '3.0.3',
    info: { title: 'memgate', version: '0.1.0', description: 'Sliding-window rate limiting on Memcached. See the README for policies and headers.' },
  },
  transformObject: (document) => {
    if (!('openapiObject' in document)) return document.swaggerObject;
    const { openapiObject } = document;
    const paths = Object.fromEntries(Object.entries(openapiObject.paths ?? {}).map(([path, item]) => [path, openApiOperationsOnly(item as PathItem)]));
    return { ...openapiObject, paths };
  },
};

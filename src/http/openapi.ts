/**
 * The OpenAPI document served at /docs/json (and browsable at /docs): built by
 * @fastify/swagger from every route's schema (schemas.ts); this module holds what belongs
 * to the document as a whole.
 */
import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import { VERSION } from '../config/version.js';

const DESCRIPTION = `memgate answers one question before an API serves a request: may this client (an IP, a user id, an e-mail: the **feature**) do this thing (log in, shorten a URL: the **event**) right now? It counts requests in sliding windows kept in Memcached, so any number of memgate instances share one set of limits, which a policy file defines.

Ask with \`/check\` (or \`/peek\`, which counts nothing); a gateway asks with \`/gate\`. Decisions are 200 when allowed and 429 when not (a gateway's denial may be 403), with the RateLimit headers of the IETF httpapi draft.

**Errors** are JSON, \`{"error": {"code": "…", "message": "…"}}\`, and count nothing. Besides each route's own, any route may answer 404 \`not_found\` (no such route, or a method it does not take), and the connection may be answered before any route sees it: 400 \`malformed_request\` (not valid HTTP), 408 \`request_timeout\` (the request took over 10 s to arrive), 431 \`request_too_large\` (URL or headers over 16 KB).

**Examples** are answers of memgate serving \`docs/api-policies.yaml\` of its repository: events \`login\` (5 a minute, 100 a day, \`onStoreError: deny\`) and \`url_shorten\` (100 a minute), and a \`gateway\` section that reads the URI from \`X-Original-URI\` (nginx's) and the client from \`X-Forwarded-For\`.`;

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
    if (item[method] !== undefined)
      kept[method] = method === 'head' ? withoutBodies(item[method] as Operation) : item[method];
  }
  return kept;
}

function withoutBodies(operation: Operation): Operation {
  const bodiless = (response: object) =>
    Object.fromEntries(Object.entries(response).filter(([field]) => field !== 'content'));
  return {
    ...operation,
    responses: Object.fromEntries(
      Object.entries(operation.responses ?? {}).map(([status, response]) => [status, bodiless(response)]),
    ),
  };
}

export const openapiOptions: FastifyDynamicSwaggerOptions = {
  openapi: {
    openapi: '3.0.3',
    info: { title: 'memgate', version: VERSION, description: DESCRIPTION },
    tags: [
      {
        name: 'decisions',
        description:
          'May this client do this now? `/check` decides and counts; `/peek` gives the same decision and counts nothing',
      },
      {
        name: 'gateway',
        description: 'For API gateways: nginx `auth_request`, Traefik ForwardAuth, Envoy `ext_authz`',
      },
      { name: 'operations', description: 'Liveness, readiness, the loaded policies, metrics' },
      {
        name: 'usage',
        description:
          'Usage history: request counts as curves over any range, and the heaviest clients (the dashboard at `/dashboard` draws them)',
      },
      { name: 'admin', description: 'Only when `MEMGATE_ADMIN_TOKEN` is set, with that token as a bearer token' },
    ],
    components: {
      securitySchemes: {
        adminToken: { type: 'http', scheme: 'bearer', description: 'The value of `MEMGATE_ADMIN_TOKEN`' },
      },
    },
  },
  transformObject: (document) => {
    if (!('openapiObject' in document)) return document.swaggerObject;
    const { openapiObject } = document;
    const paths = Object.fromEntries(
      Object.entries(openapiObject.paths ?? {}).map(([path, item]) => [path, openApiOperationsOnly(item as PathItem)]),
    );
    return { ...openapiObject, paths };
  },
};

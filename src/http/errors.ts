import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger, FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { DEFAULTS } from '../config/defaults.js';
import { ERROR_CODES, type ErrorCode, type InputErrorCode } from '../config/error-codes.js';
import { PolicyError } from '../config/policies.js';
import type { BatchItemError, ErrorBody } from '../shared/contract.js';
import { LimiterInputError } from '../counting/errors.js';
import { StoreOverloadedError, StoreUnavailableError } from '../store/counter-store.js';
import { UsageQueryError } from '../usage/query-plan.js';
import { JsonBodyError } from './json-body.js';
import { UsageStoreUnavailableError } from '../usage/usage-store.js';

export type { BatchItemError, ErrorBody };

export function errorBody(code: ErrorCode, message: string): ErrorBody {
  return { error: { code, message } };
}

/**
 * The answer to one check of a batch that threw: what /check would have answered (a 4xx
 * for its input, 503 when it was shed). Anything else is a bug, and fails the whole batch.
 */
export function batchItemError(error: unknown): BatchItemError {
  const code =
    error instanceof LimiterInputError
      ? error.code
      : error instanceof StoreOverloadedError
        ? 'overloaded'
        : error instanceof StoreUnavailableError
          ? 'store_unavailable'
          : undefined;
  if (code === undefined) throw error;
  return { ...errorBody(code, (error as Error).message), status: ERROR_CODES[code].status };
}

/** Answers `code` with its status from the table of error codes. */
export function sendError<R extends FastifyReply>(reply: R, code: ErrorCode, message: string): R {
  return reply.code(ERROR_CODES[code].status).send(errorBody(code, message)) as R;
}

/** Fastify's own 4xx errors, by their code. */
const FRAMEWORK_ERRORS: Record<string, ErrorCode> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_INVALID_JSON_BODY: 'invalid_json',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'invalid_json',
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'invalid_request',
};

/** @fastify/response-validation's error, when an answer does not fit its route's response schema. */
const RESPONSE_MISMATCH = 'FST_RESPONSE_VALIDATION_FAILED_VALIDATION';

/** Error codes of the limiter for each request field, so HTTP and the library agree. */
const FIELD_CODES: Record<string, InputErrorCode> = {
  event: 'invalid_event',
  feature: 'invalid_feature',
  cost: 'invalid_cost',
};

/**
 * Every error becomes `{ error: { code, message } }`: a 4xx for what the client sent,
 * 503 when the store cannot answer, and 500 only for memgate's own bugs (logged).
 */
export type ErrorHandler = (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => FastifyReply;

/** The app's error handler, logging store trouble and bugs to `log`. */
export function createErrorHandler(log: FastifyBaseLogger): ErrorHandler {
  return (error, request, reply) => handleError(error, request, reply, log);
}

function handleError(
  error: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
  log: FastifyBaseLogger,
): FastifyReply {
  if (error instanceof LimiterInputError) {
    return sendError(reply, error.code, error.message);
  }
  if (error instanceof JsonBodyError) {
    // fastify closes the connection after any body parser's error, lest the client send more;
    // this parser refuses only a body it has read whole, so the connection can serve the next
    // request. A flood of refused bodies then costs no new connection each (issue 24).
    reply.removeHeader('connection');
    return sendError(reply, error.code, error.message);
  }
  if (error instanceof UsageQueryError) {
    return sendError(reply, error.code, error.message);
  }
  if (error instanceof UsageStoreUnavailableError) {
    log.warn({ err: error, reqId: request.id }, 'usage store unavailable');
    return sendError(reply, 'usage_store_unavailable', error.message);
  }
  if (error instanceof PolicyError) {
    // Only an admin's reload meets this: the file on disk is invalid, the loaded policies stay.
    return sendError(reply, 'invalid_policies', `${error.message}; the policies in use are unchanged`);
  }
  if (error instanceof StoreOverloadedError) {
    // Shed, not queued: the client should retry in a moment. Not logged per request, as it comes in floods.
    return sendError(reply.header('retry-after', '1'), 'overloaded', error.message);
  }
  if (error instanceof StoreUnavailableError) {
    log.warn({ err: error, reqId: request.id }, 'counter store unavailable');
    return sendError(reply.header('retry-after', '1'), 'store_unavailable', error.message);
  }
  if (error.code === RESPONSE_MISMATCH) {
    // Only with AppOptions.validateResponses: the route's answer broke its own schema (a bug).
    log.error({ err: error, reqId: request.id }, 'answer does not fit its schema');
    return sendError(reply, 'internal_error', `memgate's answer does not fit its schema: ${error.message}`);
  }
  if (error.validation) {
    const [first] = error.validation;
    const missing = first?.params.missingProperty;
    // An item of a batch (/check/batch's /<index>, /lease/batch's /take/<index>) is named as such.
    const segments = (first?.instancePath ?? '').split('/').slice(1);
    const index = segments.findIndex((segment) => /^[0-9]+$/.test(segment));
    const item =
      index === -1 ? undefined : { kind: segments[index - 1] ?? 'check', path: segments.slice(0, index + 1) };
    const path = segments.slice(index + 1).join('/');
    const field = typeof missing === 'string' ? missing : path;
    const message = describeValidation(error, field, request, item);
    return sendError(
      reply,
      FIELD_CODES[field] ?? 'invalid_request',
      item === undefined ? message : `${item.kind} ${segments[index] ?? ''} of the batch: ${message}`,
    );
  }
  const known = FRAMEWORK_ERRORS[error.code];
  if (known) return sendError(reply, known, error.message);
  if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
    return reply.code(error.statusCode).send(errorBody('bad_request', error.message));
  }
  log.error({ err: error, reqId: request.id }, 'unexpected error');
  return sendError(reply, 'internal_error', 'memgate failed to handle this request');
}

interface SchemaNode {
  properties?: Record<string, SchemaNode>;
  items?: SchemaNode;
}

function describeValidation(
  error: FastifyError,
  field: string,
  request: FastifyRequest,
  item: { kind: string; path: readonly string[] } | undefined,
): string {
  const [first] = error.validation ?? [];
  const where = item ? `the ${item.kind}` : error.validationContext === 'body' ? 'the JSON body' : 'the query string';
  // The fields the route's schema names, for "unknown field": every route says its own (a batch item's, its item's).
  const routeSchema = request.routeOptions.schema?.[error.validationContext === 'body' ? 'body' : 'querystring'] as
    SchemaNode | undefined;
  const schema = (item?.path ?? []).reduce<SchemaNode | undefined>(
    (node, segment) => (/^[0-9]+$/.test(segment) ? node?.items : node?.properties?.[segment]),
    routeSchema,
  );
  const names = Object.keys(schema?.properties ?? {});
  const expected = names.length > 1 ? `${names.slice(0, -1).join(', ')} and ${names.at(-1) ?? ''}` : names.join('');
  if (!first) return `${where} is invalid`;
  switch (first.keyword) {
    case 'required':
      return `${field} is required in ${where}`;
    case 'additionalProperties':
      return `unknown field ${JSON.stringify(first.params.additionalProperty)} in ${where}; expected ${expected}`;
    case 'type':
      return field === ''
        ? `${where} must be a JSON ${first.params.type === 'array' ? 'array' : 'object'}`
        : `${field} must be ${/^[aeiou]/.test(String(first.params.type)) ? 'an' : 'a'} ${String(first.params.type)}`;
    case 'pattern':
      return `${field} must be a positive integer`;
    case 'minItems':
    case 'maxItems':
      return `${where} must hold 1 to ${DEFAULTS.batchMaxChecks} checks (it holds ${String((request.body as unknown[]).length)})`;
    default:
      return `${field || where} ${first.message ?? 'is invalid'}`;
  }
}

export function handleNotFound(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return sendError(reply, 'not_found', `no route ${request.method} ${request.url.split('?')[0] ?? ''}`);
}

/**
 * Requests Node's HTTP parser refuses before any route sees them (headers or URL over
 * the size limit, malformed request lines) get the same JSON error shape.
 */
export function handleClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [code, message]: [ErrorCode, string] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? ['request_too_large', 'the request line or headers exceed the size limit (a feature is at most 1 KB)']
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? ['request_timeout', 'the request took too long to arrive']
        : ['malformed_request', 'the request is not valid HTTP'];
  const { status } = ERROR_CODES[code];
  const body = JSON.stringify(errorBody(code, message));
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}

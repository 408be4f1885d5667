import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger, FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { PolicyError } from '../config/policies.js';
import { LimiterInputError } from '../counting/errors.js';
import { StoreOverloadedError, StoreUnavailableError } from '../store/counter-store.js';

export interface ErrorBody {
  error: { code: string; message: string };
}

export function errorBody(code: string, message: string): ErrorBody {
  return { error: { code, message } };
}

/** Fastify's own 4xx errors, by their code. */
const FRAMEWORK_ERRORS: Record<string, { status: number; code: string }> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { status: 415, code: 'unsupported_media_type' },
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, code: 'invalid_json' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, code: 'invalid_json' },
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, code: 'payload_too_large' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, code: 'invalid_request' },
};

/** Error codes of the limiter for each request field, so HTTP and the library agree. */
const FIELD_CODES: Record<string, string> = { event: 'invalid_event', feature: 'invalid_feature', cost: 'invalid_cost' };

/**
 * Every error becomes `{ error: { code, message } }`: a 4xx for what the client sent,
 * 503 when the store cannot answer, and 500 only for memgate's own bugs (logged).
 */
export type ErrorHandler = (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => FastifyReply;

/** The app's error handler, logging store trouble and bugs to `log`. */
export function createErrorHandler(log: FastifyBaseLogger): ErrorHandler {
  return (error, request, reply) => handleError(error, request, reply, log);
}

function handleError(error: FastifyError, request: FastifyRequest, reply: FastifyReply, log: FastifyBaseLogger): FastifyReply {
  if (error instanceof LimiterInputError) {
    return reply.code(400).send(errorBody(error.code, error.message));
  }
  if (error instanceof PolicyError) {
    // Only an admin's reload meets this: the file on disk is invalid, the loaded policies stay.
    return reply.code(400).send(errorBody('invalid_policies', `${error.message}; the policies in use are unchanged`));
  }
  if (error instanceof StoreOverloadedError) {
    // Shed, not queued: the client should retry in a moment. Not logged per request, as it comes in floods.
    return reply.code(503).header('retry-after', '1').send(errorBody('overloaded', error.message));
  }
  if (error instanceof StoreUnavailableError) {
    log.warn({ err: error, reqId: request.id }, 'counter store unavailable');
    return reply.code(503).header('retry-after', '1').send(errorBody('store_unavailable', error.message));
  }
  if (error.validation) {
    const [first] = error.validation;
    const missing = first?.params.missingProperty;
    const field = typeof missing === 'string' ? missing : (first?.instancePath.slice(1) ?? '');
    return reply.code(400).send(errorBody(FIELD_CODES[field] ?? 'invalid_request', describeValidation(error, field)));
  }
  const known = FRAMEWORK_ERRORS[error.code];
  if (known) return reply.code(known.status).send(errorBody(known.code, error.message));
  if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
    return reply.code(error.statusCode).send(errorBody('bad_request', error.message));
  }
  log.error({ err: error, reqId: request.id }, 'unexpected error');
  return reply.code(500).send(errorBody('internal_error', 'memgate failed to handle this request'));
}

function describeValidation(error: FastifyError, field: string): string {
  const [first] = error.validation ?? [];
  const where = error.validationContext === 'body' ? 'the JSON body' : 'the query string';
  if (!first) return `${where} is invalid`;
  switch (first.keyword) {
    case 'required':
      return `${field} is required in ${where}`;
    case 'additionalProperties':
      return `unknown field ${JSON.stringify(first.params.additionalProperty)} in ${where}; expected event, feature and cost`;
    case 'type':
      return field === '' ? `${where} must be a JSON object` : `${field} must be a ${String(first.params.type)}`;
    case 'pattern':
      return `${field} must be a positive integer`;
    default:
      return `${field || where} ${first.message ?? 'is invalid'}`;
  }
}

export function handleNotFound(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return reply.code(404).send(errorBody('not_found', `no route ${request.method} ${request.url.split('?')[0] ?? ''}`));
}

/**
 * Requests Node's HTTP parser refuses before any route sees them (headers or URL over
 * the size limit, malformed request lines) get the same JSON error shape.
 */
export function handleClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, code, message] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'request_too_large', 'the request line or headers exceed the size limit (a feature is at most 1 KB)']
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'request_timeout', 'the request took too long to arrive']
        : [400, 'malformed_request', 'the request is not valid HTTP'];
  const body = JSON.stringify(errorBody(code, message));
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}

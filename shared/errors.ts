/**
 * The closed family of errors the service raises on purpose. Each carries its HTTP status and
 * PostHog's error `type`/`code`; shared/http/errors.ts turns them into responses in one place.
 * Domain code throws these without knowing about HTTP.
 */
export type ErrorType =
  | 'validation_error'
  | 'authentication_error'
  | 'invalid_request'
  | 'throttled_error'
  | 'server_error';

export abstract class ServiceError extends Error {
  abstract readonly status: number;
  abstract readonly type: ErrorType;
  readonly headers: Record<string, string> = {};
  constructor(
    readonly code: string,
    readonly detail: string,
    readonly attr: string | null = null,
  ) {
    super(detail);
  }
}

export class ValidationError extends ServiceError {
  readonly status = 400;
  readonly type = 'validation_error';
  constructor(detail: string, attr: string | null, code = 'invalid_input') {
    super(code, detail, attr);
  }
}

export class ParseError extends ServiceError {
  readonly status = 400;
  readonly type = 'invalid_request';
  constructor(detail: string) {
    super('parse_error', detail);
  }
}

export class NotAuthenticated extends ServiceError {
  readonly status = 401;
  readonly type = 'authentication_error';
  constructor(detail = 'Authentication credentials were not provided.') {
    super('not_authenticated', detail);
  }
}

export class PermissionDenied extends ServiceError {
  readonly status = 403;
  readonly type = 'authentication_error';
  constructor(detail: string) {
    super('permission_denied', detail);
  }
}

export class NotFound extends ServiceError {
  readonly status = 404;
  readonly type = 'invalid_request';
  constructor(detail = 'Not found.') {
    super('not_found', detail);
  }
}

export class MethodNotAllowed extends ServiceError {
  readonly status = 405;
  readonly type = 'invalid_request';
  constructor(method: string, allowed: string[]) {
    super('method_not_allowed', `Method "${method}" not allowed.`);
    this.headers.Allow = allowed.join(', ');
  }
}

export class Conflict extends ServiceError {
  readonly status = 409;
  readonly type = 'invalid_request';
  constructor(detail: string, attr: string | null = null) {
    super('conflict', detail, attr);
  }
}

export class PayloadTooLarge extends ServiceError {
  readonly status = 413;
  readonly type = 'invalid_request';
  constructor(detail: string) {
    super('payload_too_large', detail);
  }
}

export class UnsupportedMediaType extends ServiceError {
  readonly status = 415;
  readonly type = 'invalid_request';
  constructor(contentType: string) {
    super('unsupported_media_type', `Unsupported media type "${contentType}" in request.`);
  }
}

export class Throttled extends ServiceError {
  readonly status = 429;
  readonly type = 'throttled_error';
  constructor(retryAfterSeconds: number, detail?: string) {
    super('throttled', detail ?? `Request was throttled. Expected available in ${retryAfterSeconds} seconds.`);
    this.headers['Retry-After'] = String(retryAfterSeconds);
  }
}

export class ServiceUnavailable extends ServiceError {
  readonly status = 503;
  readonly type = 'server_error';
  constructor(detail = 'The service is temporarily unavailable, please retry.') {
    super('service_unavailable', detail);
    this.headers['Retry-After'] = '1';
  }
}

/**
 * A request value as text for error messages and choice checks: `String(value)`, except for objects whose
 * `toString`/`valueOf` keys are data (`{"toString": {}}` from JSON), which String() cannot convert.
 */
export function textOf(value: unknown): string {
  try {
    return String(value);
  } catch {
    return JSON.stringify(value) ?? Object.prototype.toString.call(value);
  }
}

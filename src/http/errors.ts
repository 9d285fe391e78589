/** The closed catalogue of error codes (decisions §2) and the status each one carries. */
export const ERROR_STATUS = {
  invalid_request: 400,
  invalid_json: 400,
  invalid_content_type: 400,
  invalid_query: 400,
  invalid_filter: 400,
  invalid_token: 400,
  unauthorized: 401,
  forbidden: 403,
  https_required: 403,
  not_found: 404,
  method_not_allowed: 405,
  email_taken: 409,
  last_admin: 409,
  idempotency_conflict: 409,
  payload_too_large: 413,
  rate_limited: 429,
  internal_error: 500,
} as const satisfies Record<string, number>;

export type ErrorCode = keyof typeof ERROR_STATUS;

export interface ErrorDetail {
  field: string;
  message: string;
}

/** The one error type services throw; the error handler renders it as the envelope. */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details?: ErrorDetail[];
  readonly headers?: Record<string, string>;

  constructor(
    code: ErrorCode,
    message: string,
    extra: { details?: ErrorDetail[]; headers?: Record<string, string> } = {},
  ) {
    super(message);
    this.name = 'AppError';
    this.code = code;
    this.status = ERROR_STATUS[code];
    this.details = extra.details;
    this.headers = extra.headers;
  }
}

/** `notFound('data object', id)` -> 404 not_found "No data object with id dat_…". */
export const notFound = (what: string, id?: string) =>
  new AppError('not_found', id ? `No ${what} with id ${id}.` : `No such ${what}.`);

/** 400 invalid_request naming one field. */
export const invalidField = (field: string, message: string) =>
  new AppError('invalid_request', `${field} ${message}.`, { details: [{ field, message }] });

export const forbidden = (message = 'The API key lacks the scope this call needs.') =>
  new AppError('forbidden', message);

export const unauthorized = (message = 'A valid API key is required: Authorization: Bearer <key>.') =>
  new AppError('unauthorized', message, { headers: { 'www-authenticate': 'Bearer realm="ads"' } });
/** The 401 of a key that is not (or no longer) usable: malformed, unknown, revoked, its user removed. */
export const BAD_KEY_MESSAGE = 'The API key is malformed, unknown or revoked.';

import createFetchClient, { type Client } from 'openapi-fetch';
import { type FetchLike, type RetryOptions, withRetry } from './retry.ts';
import type { components, paths } from './schema.d.ts';

/** The typed client: `client.GET('/v1/data/{id}', { params: { path: { id } } })` and friends. */
export type AdsClient = Client<paths>;

/** The error envelope every failed call answers with. */
export type ErrorBody = components['schemas']['ErrorBody'];

export interface ClientOptions {
  /** The instance root, e.g. `https://ads.example.com`; operation paths carry `/v1`. */
  baseUrl: string;
  /** An API key (`ads_…`), sent as `Authorization: Bearer`. */
  apiKey: string;
  /** A fetch to use instead of the global one (e.g. one passing an undici `dispatcher`). */
  fetch?: FetchLike;
  /** Back-off on 429 (on by default); `false` returns every 429 at once. */
  retry?: RetryOptions | false;
  /** Extra headers for every request. */
  headers?: Record<string, string>;
}

/**
 * A client for one instance and one API key, typed from the service's OpenAPI document.
 * @example const ads = createClient({ baseUrl: 'https://ads.example.com', apiKey: process.env.ADS_KEY! });
 */
export function createClient(options: ClientOptions): AdsClient {
  const base: FetchLike = options.fetch ?? ((request, init) => globalThis.fetch(request, init));
  const fetch = options.retry === false ? base : withRetry(base, options.retry);
  const client = createFetchClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    fetch,
    headers: { ...options.headers, authorization: `Bearer ${options.apiKey}` },
  });
  // openapi-fetch parses every body as JSON unless told otherwise; the text operations default to
  // text, so `data` is the string their types promise.
  const get = client.GET as unknown as (path: string, init?: object) => ReturnType<AdsClient['GET']>;
  client.GET = ((path: string, init?: object) =>
    get(path, TEXT_PATHS.has(path) ? { parseAs: 'text', ...init } : init)) as unknown as AdsClient['GET'];
  return client;
}

/** Paths whose GET answers `text/plain` (the Prometheus metrics). */
type TextPath = {
  [P in keyof paths]: paths[P] extends { get: { responses: { 200: { content: { 'text/plain': unknown } } } } }
    ? P
    : never;
}[keyof paths];
const TEXT_PATH_LIST = ['/metrics'] as const satisfies readonly TextPath[];
// Fails to compile when the document gains a text operation this list lacks.
const everyTextPath: Exclude<TextPath, (typeof TEXT_PATH_LIST)[number]> extends never ? true : never = true;
const TEXT_PATHS: ReadonlySet<string> = everyTextPath && new Set(TEXT_PATH_LIST);

/** A failed call: the HTTP status and the service's error code, message and request id. */
export class AdsApiError extends Error {
  readonly status: number;
  readonly code: ErrorBody['error']['code'] | 'unknown';
  readonly requestId: string | undefined;
  readonly details: ErrorBody['error']['details'];

  constructor(status: number, body: unknown) {
    const error = (body as Partial<ErrorBody> | undefined)?.error;
    super(error?.message ?? `HTTP ${status}`);
    this.name = 'AdsApiError';
    this.status = status;
    this.code = error?.code ?? 'unknown';
    this.requestId = error?.request_id;
    this.details = error?.details;
  }
}

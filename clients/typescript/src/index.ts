export { AdsApiError, type AdsClient, type ClientOptions, createClient, type ErrorBody } from './client.ts';
export { type PageOf, type PageQuery, type PaginatedPath, paginate } from './paginate.ts';
export { type FetchLike, parseRetryAfter, type RetryOptions, withRetry } from './retry.ts';
export type { components, operations, paths, webhooks } from './schema.d.ts';
export {
  verifyWebhook,
  type WebhookEvent,
  type WebhookHeaders,
  WebhookVerificationError,
} from './webhooks.ts';

import { type TSchema, Type } from 'typebox';
import { EVENT_NAMES } from '../events/outbox.ts';
import { DATA_TYPES } from '../modules/data/schemas.ts';
import { sample } from './openapi-examples.ts';
import { Timestamp } from './schemas.ts';

/** The event `POST /webhooks/{id}/test` sends; it is never stored or retried. */
export const TEST_EVENT = 'webhook.test';

const ULID = '01JD4Z5T8N3QK9W2V7R6M1B0XC';

const DataEventData = (updated: boolean) =>
  Type.Object({
    id: Type.String({ examples: [`dat_${ULID}`] }),
    title: Type.String({ examples: ['Quarterly report'] }),
    type: Type.String({ enum: [...DATA_TYPES] }),
    ...(updated
      ? {
          changed: Type.Array(Type.String(), {
            description: 'Names of the fields this update changed.',
            examples: [['title', 'tags']],
          }),
        }
      : {}),
  });

const UserEventData = (updated: boolean, created = false) =>
  Type.Object({
    id: Type.String({ examples: [`usr_${ULID}`] }),
    email: Type.String({ format: 'email', examples: ['ada@example.com'] }),
    role: Type.String({ enum: ['member', 'admin'] }),
    // An invitation creates the user (an account's first admin comes with no event), so a
    // user.created member is always still invited.
    status: Type.String({ enum: created ? ['invited'] : ['invited', 'active'] }),
    ...(updated
      ? {
          changed: Type.Array(Type.String(), {
            description: 'Names of the fields this update changed.',
            examples: [['role']],
          }),
        }
      : {}),
  });

const TestEventData = Type.Object({ webhook_id: Type.String({ examples: [`wh_${ULID}`] }) });

const SUMMARIES: Record<string, [string, TSchema]> = {
  'data.created': ['A data object was created', DataEventData(false)],
  'data.updated': ['A data object was changed', DataEventData(true)],
  'data.deleted': ['A data object was deleted', DataEventData(false)],
  'user.created': ['A member was invited', UserEventData(false, true)],
  'user.updated': ["A member's role changed", UserEventData(true)],
  'user.deleted': ['A member was removed or an invitation cancelled', UserEventData(false)],
  [TEST_EVENT]: ['A test ping from POST /v1/webhooks/{id}/test', TestEventData],
};

/** `{id, event, timestamp, account_id, data}` of decisions §7 for one event name. */
function payloadSchema(event: string, data: TSchema) {
  const test = event === TEST_EVENT;
  return Type.Object(
    {
      id: Type.String({
        description: test
          ? 'A fresh event id for this ping; also the webhook-id header.'
          : 'The event id; also the webhook-id header, stable across retries.',
        examples: [`evt_${ULID}`],
      }),
      event: Type.String({ enum: [event] }),
      timestamp: {
        ...Timestamp,
        description: test
          ? 'When the ping was sent.'
          : "When the change was committed; one object's (or member's) events have strictly increasing timestamps.",
      },
      account_id: Type.String({ examples: [`acc_${ULID}`] }),
      data,
    },
    { description: `The ${event} event.` },
  );
}

const header = (name: string, required: boolean, description: string, example: string) => ({
  name,
  in: 'header',
  required,
  description,
  schema: { type: 'string' },
  example,
});

const deliveryHeader = (test: boolean) =>
  header(
    'X-Service-Delivery',
    true,
    test
      ? 'A fresh delivery id for this ping (pings are not stored).'
      : 'The delivery id, stable across retries of this delivery.',
    `whd_${ULID}`,
  );

const HEADERS = [
  header('X-Service-Event', true, 'The event name.', 'data.created'),
  deliveryHeader(false),
  header(
    'X-Service-Signature',
    false,
    "With a secret: hex HMAC-SHA256 of the raw body keyed with the secret's UTF-8 bytes. Compare in constant time.",
    '5d41402abc4b2a76b9719d911017c5925d41402abc4b2a76b9719d911017c592',
  ),
  header('webhook-id', true, 'Standard Webhooks: the event id (deduplicate on it).', `evt_${ULID}`),
  header(
    'webhook-timestamp',
    true,
    'Standard Webhooks: seconds since the epoch when this attempt was signed; reject old ones (replays).',
    '1795316536',
  ),
  header(
    'webhook-signature',
    false,
    "With a secret: `v1,` + base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{raw body}`, keyed with the secret's UTF-8 bytes.",
    'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=',
  ),
];

const VERIFY = [
  'Verify `X-Service-Signature` or the Standard Webhooks headers with the webhook secret before trusting the body,',
  'and deduplicate on `webhook-id`. The TypeScript client exports `verifyWebhook` for both.',
];

const DESCRIPTION = [
  'Sent as `POST` to each active webhook subscribed to the event (or to `*`), at least once.',
  ...VERIFY,
  'A `2xx` within 10 s is success; anything else is retried about 1 min, 5 min, 30 min, 2 h and 8 h later',
  "(the receiver's `Retry-After` is honoured within that schedule). `410 Gone` disables the webhook at once.",
].join(' ');

// A ping goes to the one webhook asked for, disabled or not, once: it is neither stored nor retried,
// and its answer, whatever it is, only comes back in the result of POST /v1/webhooks/{id}/test.
const TEST_DESCRIPTION = [
  'Sent as `POST` once, only when `POST /v1/webhooks/{id}/test` asks for it, to that webhook whatever',
  'its status and events (a disabled one too, to check a fix before re-enabling it). It is signed like',
  'every delivery. It is not stored and never retried, and its answer (even `410 Gone`) changes',
  'nothing: the call reports it as `{success, status_code, latency_ms, error, event_id}`.',
  ...VERIFY,
].join(' ');

/**
 * The OpenAPI 3.1 `webhooks` section: one entry per event the service sends (decisions §7), with
 * the payload schema, an example and the delivery and signature headers.
 */
export function webhooksSection(): Record<string, unknown> {
  const names = [...EVENT_NAMES, TEST_EVENT];
  const section: Record<string, unknown> = {};
  for (const event of names) {
    const known = SUMMARIES[event];
    if (!known) throw new Error(`openapi: no payload schema for event ${event}`);
    const [summary, data] = known;
    const schema = payloadSchema(event, data) as unknown as Record<string, unknown>;
    const test = event === TEST_EVENT;
    section[event] = {
      post: {
        operationId: `webhook${event.replace(/(^|\.)([a-z])/g, (_m, _d, c: string) => c.toUpperCase())}`,
        summary: `${event}: ${summary}`,
        description: test ? TEST_DESCRIPTION : DESCRIPTION,
        tags: ['Webhook events'],
        parameters: HEADERS.map((h) =>
          h.name === 'X-Service-Event'
            ? { ...h, example: event }
            : h.name === 'X-Service-Delivery'
              ? deliveryHeader(test)
              : h,
        ),
        requestBody: {
          required: true,
          content: { 'application/json': { schema, example: sample(schema, {}) } },
        },
        responses: test
          ? {
              '2XX': { description: 'Reported as `success: true`.' },
              default: {
                description:
                  'Any other status, a redirect or no answer within 10 seconds: reported as `success: false`; nothing is retried or disabled.',
              },
            }
          : {
              '2XX': { description: 'Received. Any 2xx within 10 seconds counts as delivered.' },
              '410': { description: 'Gone: the service disables this webhook and stops sending.' },
              default: {
                description:
                  'Any other status, a redirect or no answer within 10 seconds: the delivery is retried on the schedule.',
              },
            },
      },
    };
  }
  return section;
}

import { type Static, Type } from 'typebox';
import { EVENT_NAMES } from '../../events/outbox.ts';
import { MAX_WEBHOOK_URL_LENGTH } from '../../events/ssrf.ts';
import { CollectionEnvelope, Envelope, IdParam, PageQuery, Text, Timestamp } from '../../http/schemas.ts';

/** Most webhooks one account may register (decisions §7). */
export const MAX_WEBHOOKS_PER_ACCOUNT = 100;

const ULID = '[0-9A-HJKMNP-TV-Z]{26}';

const Url = Text({
  minLength: 1,
  maxLength: MAX_WEBHOOK_URL_LENGTH,
  description: 'Absolute https URL without user info; private, loopback and reserved targets are refused.',
});
// The names as an enum, so the document and the generated client list them (a value outside it is
// a 400 naming the known ones); "*" alone is checked by the service.
const Events = Type.Array(Type.Enum([...EVENT_NAMES, '*']), {
  minItems: 1,
  maxItems: 32,
  description:
    'Event names (data.created, data.updated, data.deleted, user.created, user.updated, user.deleted) or exactly ["*"] for every current and future event.',
});
const Secret = Text({
  minLength: 1,
  maxLength: 256,
  description:
    'Signs every payload (X-Service-Signature and webhook-signature). Stored encrypted, never returned.',
});

export const CreateWebhookBody = Type.Object(
  { url: Url, events: Events, secret: Type.Optional(Secret) },
  { additionalProperties: false },
);
export type CreateWebhookInput = Static<typeof CreateWebhookBody>;

export const PatchWebhookBody = Type.Object(
  {
    url: Type.Optional(Url),
    events: Type.Optional(Events),
    secret: Type.Optional(
      Type.Union([Secret, Type.Null()], { description: 'A new secret, or null to stop signing.' }),
    ),
    status: Type.Optional(Type.Enum(['active'], { description: '"active" re-enables a disabled webhook.' })),
  },
  { additionalProperties: false },
);
export type PatchWebhookInput = Static<typeof PatchWebhookBody>;

export const Webhook = Type.Object(
  {
    id: Type.String({ examples: ['wh_01JD4Z5T8N3QK9W2V7R6M1B0XC'] }),
    url: Type.String(),
    events: Type.Array(Type.String()),
    status: Type.Enum(['active', 'disabled']),
    has_secret: Type.Boolean({
      description: 'Whether payloads are signed; the secret itself is never returned.',
    }),
    disabled_reason: Type.Union([Type.String(), Type.Null()], {
      description: 'Why the service disabled it (410 Gone, retries exhausted); null while active.',
    }),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'Webhook' },
);
export type WebhookOut = Static<typeof Webhook>;

export const Attempt = Type.Object({
  at: Timestamp,
  status_code: Type.Union([Type.Integer(), Type.Null()]),
  duration_ms: Type.Integer({ minimum: 0 }),
  error: Type.Union([Type.String(), Type.Null()]),
});

export const Delivery = Type.Object(
  {
    id: Type.String({ examples: ['whd_01JD4Z5T8N3QK9W2V7R6M1B0XC'] }),
    event: Type.String(),
    event_id: Type.String(),
    status: Type.Enum(['pending', 'succeeded', 'failed']),
    attempts: Type.Array(Attempt),
    next_attempt_at: Type.Union([Timestamp, Type.Null()]),
    created_at: Timestamp,
  },
  { $id: 'WebhookDelivery' },
);
export type DeliveryOut = Static<typeof Delivery>;

export const TestResult = Type.Object({
  success: Type.Boolean({ description: 'True when the receiver answered 2xx within the deadline.' }),
  status_code: Type.Union([Type.Integer(), Type.Null()], { description: 'Null when no response came.' }),
  latency_ms: Type.Integer({ minimum: 0 }),
  error: Type.Union([Type.String(), Type.Null()]),
  event_id: Type.String(),
});
export type TestResultOut = Static<typeof TestResult>;

export const ListWebhooksQuery = Type.Object({ ...PageQuery }, { additionalProperties: false });
export const ListDeliveriesQuery = Type.Object(
  { ...PageQuery, status: Type.Optional(Type.Enum(['pending', 'succeeded', 'failed'])) },
  { additionalProperties: false },
);

export const WebhookIdParams = IdParam('wh_');
export const DeliveryParams = Type.Object({
  id: Type.String({ pattern: `^wh_${ULID}$` }),
  delivery_id: Type.String({ pattern: `^whd_${ULID}$` }),
});

export const WebhookEnvelope = Envelope(Webhook);
export const WebhookListEnvelope = CollectionEnvelope('webhooks', Webhook);
export const DeliveryEnvelope = Envelope(Delivery);
export const DeliveryListEnvelope = CollectionEnvelope('deliveries', Delivery);
export const TestResultEnvelope = Envelope(TestResult);

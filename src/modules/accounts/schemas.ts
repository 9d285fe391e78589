import { Type } from 'typebox';
import { Envelope, Timestamp } from '../../http/schemas.ts';

const UsageWindow = Type.Object({
  used: Type.Integer({ minimum: 0 }),
  limit: Type.Integer({ minimum: 1 }),
  remaining: Type.Integer({ minimum: 0 }),
  reset_at: Timestamp,
});

export const Account = Type.Object({
  id: Type.String({ examples: ['acc_01JD4Z5T8N3QK9W2V7R6M1B0XC'] }),
  name: Type.String(),
  plan: Type.Enum(['free', 'pro', 'enterprise']),
  created_at: Timestamp,
  limits: Type.Union(
    [Type.Object({ requests_per_minute: Type.Integer(), requests_per_day: Type.Integer() }), Type.Null()],
    { description: 'null on the enterprise plan: unlimited.' },
  ),
  usage: Type.Union(
    [Type.Object({ api_key_id: Type.String(), minute: UsageWindow, day: UsageWindow }), Type.Null()],
    { description: "The calling key's usage in the current windows; null when unlimited." },
  ),
});

export const AccountEnvelope = Envelope(Account);

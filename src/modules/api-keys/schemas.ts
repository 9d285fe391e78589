import { Type } from 'typebox';
import { CollectionEnvelope, Envelope, IdParam, PageQuery, Text, Timestamp } from '../../http/schemas.ts';
import { SCOPES } from './scopes.ts';

const ScopeName = Type.Enum([...SCOPES]);

export const ApiKey = Type.Object({
  id: Type.String({ examples: ['key_01JD4Z5T8N3QK9W2V7R6M1B0XC'] }),
  name: Type.Union([Type.String(), Type.Null()]),
  prefix: Type.String({ description: 'The first characters of the key, to recognise it.' }),
  scopes: Type.Array(ScopeName),
  user_id: Type.String(),
  created_at: Timestamp,
});

export const CreatedApiKey = Type.Object({
  ...ApiKey.properties,
  key: Type.String({ description: 'The secret key. Shown once; only its hash is stored.' }),
});

export const CreateApiKeyBody = Type.Object(
  {
    name: Type.Optional(Text({ minLength: 1, maxLength: 100 })),
    scopes: Type.Array(ScopeName, { minItems: 1, maxItems: 3, uniqueItems: true }),
  },
  { additionalProperties: false },
);

export const ListApiKeysQuery = Type.Object({ ...PageQuery }, { additionalProperties: false });
export const ApiKeyIdParams = IdParam('key_');
export const ApiKeyEnvelope = Envelope(CreatedApiKey);
export const ApiKeyListEnvelope = CollectionEnvelope('keys', ApiKey);

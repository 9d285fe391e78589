import { type Static, Type } from 'typebox';
import {
  CollectionEnvelope,
  Envelope,
  IdParam,
  PageQuery,
  SAFE_TEXT,
  Text,
  Timestamp,
} from '../../http/schemas.ts';

export const DATA_TYPES = ['document', 'note', 'record'] as const;
export const DataType = Type.Enum([...DATA_TYPES], { description: 'document, note or record' });

const Title = Text({
  minLength: 1,
  maxLength: 500,
  description: '1 to 500 characters, not blank (white space and invisible characters only).',
});
const Content = Text({ description: 'Plain text, fully indexed. Bounded only by the request body limit.' });
const Tags = Type.Array(Text({ minLength: 1, maxLength: 64 }), {
  maxItems: 50,
  description: 'Up to 50 tags of 1 to 64 characters, none blank; duplicates are dropped, order is kept.',
});
const MetadataIn = Type.Unsafe<Record<string, string>>({
  type: 'object',
  maxProperties: 50,
  propertyNames: { minLength: 1, maxLength: 64, pattern: SAFE_TEXT },
  additionalProperties: { type: 'string', maxLength: 1000, pattern: SAFE_TEXT },
  description: 'Up to 50 string keys (1 to 64 characters) with string values (up to 1,000 characters).',
});
const MetadataOut = Type.Unsafe<Record<string, string>>({
  type: 'object',
  additionalProperties: { type: 'string' },
});

export const CreateDataBody = Type.Object(
  {
    title: Title,
    type: DataType,
    content: Type.Optional(Content),
    tags: Type.Optional(Tags),
    metadata: Type.Optional(MetadataIn),
  },
  { additionalProperties: false },
);
export type CreateDataInput = Static<typeof CreateDataBody>;

export const PatchDataBody = Type.Object(
  {
    title: Type.Optional(Title),
    type: Type.Optional(DataType),
    content: Type.Optional(Content),
    tags: Type.Optional(Tags),
    metadata: Type.Optional(MetadataIn),
  },
  { additionalProperties: false },
);
export type PatchDataInput = Static<typeof PatchDataBody>;

export const DataObject = Type.Object(
  {
    id: Type.String({ examples: ['dat_01JD4Z5T8N3QK9W2V7R6M1B0XC'] }),
    title: Type.String(),
    type: DataType,
    content: Type.String(),
    tags: Type.Array(Type.String()),
    metadata: MetadataOut,
    created_at: Timestamp,
    updated_at: Type.Union([Timestamp, Type.Null()]),
  },
  { $id: 'DataObject' },
);
export type DataObjectOut = Static<typeof DataObject>;

export const DataListItem = Type.Object({
  id: Type.String(),
  title: Type.String(),
  type: DataType,
  created_at: Timestamp,
});

export const ListDataQuery = Type.Object(
  {
    ...PageQuery,
    sort: Type.Optional(
      Type.Enum(['date', 'title'], {
        default: 'date',
        description:
          'date: by created_at (newest first by default); title: A to Z ignoring case and accents. Ties break by id.',
      }),
    ),
    order: Type.Optional(
      Type.Enum(['asc', 'desc'], {
        description: 'Default: desc for date (newest first), asc for title (A to Z).',
      }),
    ),
  },
  { additionalProperties: false },
);

export const DataIdParams = IdParam('dat_');
export const DataEnvelope = Envelope(DataObject);
export const DataListEnvelope = CollectionEnvelope('items', DataListItem);

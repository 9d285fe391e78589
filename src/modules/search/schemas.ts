import { Type } from 'typebox';
import { CollectionEnvelope, PageQuery, Text, Timestamp } from '../../http/schemas.ts';
import { DataType } from '../data/schemas.ts';
import { MAX_FILTERS } from './params.ts';

/** A hard bound before trimming; the service allows 1,000 characters after trimming (decisions §6). */
// `q` is 1 to 1,000 characters once trimmed (the parser checks); untrimmed it is bounded only by
// the 16 KB request line, so surrounding spaces never count against it.
const MAX_RAW_QUERY = 16_384;

export const SearchQueryString = Type.Object(
  {
    q: Text({
      minLength: 1,
      maxLength: MAX_RAW_QUERY,
      description:
        'The query: 1 to 1,000 characters after trimming. Words (AND), OR, NOT, -word, "phrases", ' +
        '* wildcards, field:value for title, content, tag(s), type, author, status, description. See docs/search.md.',
    }),
    filter: Type.Optional(
      // Each filter's form and length are checked by parseFilters, so that any malformed filter,
      // an empty one included, is `invalid_filter` (decisions §6); only the count is bounded here.
      Type.Array(Text(), {
        maxItems: MAX_FILTERS,
        description:
          'Repeatable (up to 20), ANDed, exact: type:<type>, tag:<tag> (or tags:), status:<v>, author:<v>, ' +
          'metadata.<key>:<v>; each at most 1,100 characters.',
      }),
    ),
    from: Type.Optional(
      Text({
        maxLength: 64,
        description:
          'Created at or after: ISO 8601 date-time with Z or an offset, or a date (its first instant UTC).',
      }),
    ),
    to: Type.Optional(
      Text({
        maxLength: 64,
        description:
          'Created at or before: ISO 8601 date-time with Z or an offset, or a date (its last instant UTC).',
      }),
    ),
    sort: Type.Optional(Type.Enum(['relevance', 'date', 'title'], { default: 'relevance' })),
    order: Type.Optional(
      Type.Enum(['asc', 'desc'], { description: 'Default: desc for relevance and date, asc for title.' }),
    ),
    ...PageQuery,
  },
  { additionalProperties: false },
);

export const SearchResult = Type.Object({
  id: Type.String(),
  title: Type.String(),
  type: DataType,
  score: Type.Number({
    exclusiveMinimum: 0,
    maximum: 1,
    description: 'Higher is better; follows the relevance order, also when sorting by date or title.',
  }),
  created_at: Timestamp,
  excerpt: Type.String({
    description: 'About 30 words around the first match, matches in <em>, everything else HTML-escaped.',
  }),
});

export const SearchEnvelope = CollectionEnvelope('results', SearchResult, {
  incomplete_results: Type.Boolean({
    description:
      'True when a wildcard matched more words than a search expands (the 128 most frequent are kept): ' +
      'objects found only through the other words are missing from results and total. Narrow the pattern.',
  }),
});

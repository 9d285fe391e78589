import type { Static } from 'typebox';
import type { AppContext } from '../../context.ts';
import { offsetOf } from '../../http/envelope.ts';
import { AppError, invalidField } from '../../http/errors.ts';
import { releaseHeldWrites } from '../../lib/held-writes.ts';
import { contributingTerms, hasAlternatives } from '../../search/contributing.ts';
import {
  buildExcerpt,
  compileExcerptTerms,
  type ExcerptMatcher,
  escapeHtml,
  leadingExcerpt,
} from '../../search/excerpt.ts';
import {
  MAX_QUERY_CHARS,
  type PositiveTerm,
  parseQuery,
  positiveTerms,
  QueryError,
  type QueryNode,
  type SearchField,
} from '../../search/parser.ts';
import { buildPlan, vocabularyPatterns } from '../../search/plan.ts';
import {
  expandWildcards,
  MAX_EXPANDED_PATTERNS,
  searchIndex,
  searchSnapshot,
} from '../../search/search-index.ts';
import { findTagsAndMetadata } from '../data/repo.ts';
import { parseFilters, parseRange } from './params.ts';
import type { SearchQueryString, SearchResult } from './schemas.ts';

type SearchInput = Static<typeof SearchQueryString>;
type SearchResultOut = Static<typeof SearchResult>;

function invalidQuery(err: QueryError): AppError {
  const where = err.position === undefined ? '' : ` (at character ${err.position})`;
  const message = `Invalid query: ${err.message}${where}.`;
  return new AppError('invalid_query', message, { details: [{ field: 'q', message: err.message + where }] });
}

/** Parses `q`; a query the language rejects is 400 invalid_query, naming the position when known. */
function parse(q: string): QueryNode {
  const trimmed = q.trim();
  if (trimmed === '') throw invalidField('q', 'must not be blank');
  if (Array.from(trimmed).length > MAX_QUERY_CHARS) {
    throw invalidField('q', `must be at most ${MAX_QUERY_CHARS} characters after trimming`);
  }
  try {
    return parseQuery(q);
  } catch (err) {
    throw err instanceof QueryError ? invalidQuery(err) : err;
  }
}

const termsFor = (terms: PositiveTerm[], field: SearchField) =>
  terms.filter((t) => t.field === null || t.field === field);

/** The content around the first match, else the highlighted title, else the start of the content. */
function excerptOf(
  row: { title: string; content: string },
  match: { content: ExcerptMatcher; title: ExcerptMatcher },
): string {
  return (
    buildExcerpt(row.content, match.content) ??
    buildExcerpt(row.title, match.title) ??
    (/\S/u.test(row.content) ? leadingExcerpt(row.content) : escapeHtml(row.title))
  );
}

/** GET /search (decisions §6): one page of results and the total, within the caller's account only. */
export async function searchData(
  ctx: AppContext,
  accountId: string,
  input: SearchInput & { page: number; limit: number },
): Promise<{ results: SearchResultOut[]; total: number; incomplete: boolean }> {
  // A search can run long, synchronously on SQLite: answers already finished go out first.
  releaseHeldWrites();
  const ast = parse(input.q);
  const patterns = vocabularyPatterns(ast);
  if (patterns.length > MAX_EXPANDED_PATTERNS) {
    throw invalidQuery(
      new QueryError(
        `query has more than ${MAX_EXPANDED_PATTERNS} different wildcards with a leading or inner *`,
      ),
    );
  }
  const filters = parseFilters(input.filter ?? []);
  const range = parseRange(input.from, input.to);
  const sort = input.sort ?? 'relevance';
  const order = input.order ?? (sort === 'title' ? 'asc' : 'desc');
  const { db, dialect } = ctx.database;
  let incomplete = false;
  const found = await searchSnapshot(db, dialect, async (snap) => {
    const expanded = await expandWildcards(snap, dialect, accountId, patterns);
    incomplete = expanded.truncated;
    const plan = buildPlan(ast, expanded.words);
    if (!plan) return { hits: [], total: 0 };
    return searchIndex(snap, dialect, {
      accountId,
      plan,
      filters,
      ...range,
      sort,
      order,
      limit: input.limit,
      offset: offsetOf(input),
    });
  });
  // Excerpts are built after the database has let go of the connection.
  const terms = positiveTerms(ast);
  const matchers = new Map<string, { content: ExcerptMatcher; title: ExcerptMatcher }>();
  const matcherFor = (highlighted: PositiveTerm[]) => {
    const key = JSON.stringify(highlighted);
    let m = matchers.get(key);
    if (!m) {
      m = {
        content: compileExcerptTerms(termsFor(highlighted, 'content')),
        title: compileExcerptTerms(termsFor(highlighted, 'title')),
      };
      matchers.set(key, m);
    }
    return m;
  };
  // With an OR, a positive term may sit in a branch an object did not match through: only the terms
  // of the branches it satisfies are its matches (decisions §6), read from its tags and metadata too.
  const extra = hasAlternatives(ast)
    ? await findTagsAndMetadata(
        db,
        accountId,
        found.hits.map((h) => h.id),
      )
    : null;
  const results = found.hits.map(({ id, score, row }): SearchResultOut => {
    const more = extra?.get(id);
    const highlighted = (more && contributingTerms(ast, { ...row, ...more })) ?? terms;
    return {
      id,
      title: row.title,
      type: row.type as SearchResultOut['type'],
      score,
      created_at: row.created_at,
      excerpt: excerptOf(row, matcherFor(highlighted)),
    };
  });
  return { results, total: found.total, incomplete };
}

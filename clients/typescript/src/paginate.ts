import { AdsApiError, type AdsClient } from './client.ts';
import type { paths } from './schema.d.ts';

type GetOf<P extends keyof paths> = paths[P] extends { get: infer O } ? O : never;
type QueryOf<P extends keyof paths> =
  GetOf<P> extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;
type PathParamsOf<P extends keyof paths> = GetOf<P> extends { parameters: { path: infer X } } ? X : never;

/** The body of one page of `P`: `{ data: { <items>, total, page, pages, limit }, meta }`. */
export type PageOf<P extends keyof paths> =
  GetOf<P> extends {
    responses: { 200: { content: { 'application/json': infer B } } };
  }
    ? B
    : never;

/** Collection paths: a GET taking `page` and answering `meta.pages`. */
export type PaginatedPath = {
  [P in keyof paths]: QueryOf<P> extends { page?: number }
    ? PageOf<P> extends { meta: { pages: number } }
      ? P
      : never
    : never;
}[keyof paths];

/** Query of a paginated path without `page`, which the iterator drives. */
export type PageQuery<P extends PaginatedPath> = Omit<QueryOf<P>, 'page'> & { page?: number };

/**
 * The arguments after the path: the query, required when the path has a required query parameter
 * (`q` of `/v1/search`), then the path parameters, required when the path has any.
 */
type Optional<T> = Partial<T> extends T ? true : false;
export type PaginateArgs<P extends PaginatedPath> = [PathParamsOf<P>] extends [never]
  ? Optional<Omit<QueryOf<P>, 'page'>> extends true
    ? [query?: PageQuery<P>]
    : [query: PageQuery<P>]
  : Optional<Omit<QueryOf<P>, 'page'>> extends true
    ? [query: PageQuery<P> | undefined, pathParams: PathParamsOf<P>]
    : [query: PageQuery<P>, pathParams: PathParamsOf<P>];

const MAX_PAGES = 100_000;

/**
 * Walks a collection page by page, from `query.page` (default 1) to the last one.
 * Throws AdsApiError when a page fails (after the client's own 429 back-off).
 * @example for await (const page of paginate(ads, '/v1/data', { limit: 100 })) use(page.data.items);
 */
export async function* paginate<P extends PaginatedPath>(
  client: AdsClient,
  path: P,
  ...args: PaginateArgs<P>
): AsyncGenerator<PageOf<P>, void, undefined> {
  const [query, pathParams] = args as [PageQuery<P> | undefined, PathParamsOf<P> | undefined];
  const first = query?.page ?? 1;
  // The typed overloads cannot follow a generic path; the signature above carries the types.
  const get = client.GET as unknown as (
    path: string,
    init: unknown,
  ) => Promise<{ data?: unknown; error?: unknown; response: Response }>;
  for (let page = first; page < first + MAX_PAGES; page++) {
    const { data, error, response } = await get(path, {
      params: { query: { ...query, page }, path: pathParams },
    });
    if (error !== undefined || data === undefined) throw new AdsApiError(response.status, error);
    const body = data as PageOf<P>;
    yield body;
    if (page >= (body as { meta: { pages: number } }).meta.pages) return;
  }
}

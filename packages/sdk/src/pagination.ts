import type { EbrcClient } from './client.ts';
import type { paths } from './schema.d.ts';

type JsonOk<Operation> = Operation extends { responses: { 200: { content: { 'application/json': infer Body } } } } ? Body : never;
type QueryOf<Operation> = Operation extends { parameters: { query?: infer Query } } ? NonNullable<Query> : never;
type PathOf<Operation> = Operation extends { parameters: { path?: infer Path } } ? NonNullable<Path> : never;
/** A list's own filters, without the page and its size (the iterator moves those). */
type Filters<Operation> = Omit<QueryOf<Operation>, 'page' | 'limit'>;

/** The lists answered as `{ items, meta: { totalItems, itemsPerPage, totalPages, currentPage } }`. */
export type ItemsListPath = '/api/v1/platform-customers' | '/api/v1/webhook-endpoints' | '/api/v1/webhook-endpoints/{id}/deliveries' | '/api/v1/events';
export type ItemOf<P extends ItemsListPath> = JsonOk<paths[P]['get']> extends { items: Array<infer Item> } ? Item : never;
export type ItemsListParams<P extends ItemsListPath> = {
  query?: Filters<paths[P]['get']>;
} & ([PathOf<paths[P]['get']>] extends [never] ? { path?: never } : { path: PathOf<paths[P]['get']> });

export type Irm = JsonOk<paths['/api/v1/irm/refresh']['post']> extends { data: Array<infer Item> } ? Item : never;
export type IrmFilters = Filters<paths['/api/v1/irm/refresh']['post']>;
export type RequestRecord = JsonOk<paths['/api/v1/genebrc']['get']> extends Array<infer Item> ? Item : never;
export type RequestFilters = Filters<paths['/api/v1/genebrc']['get']>;

export type PageOptions = {
  /** Items per request (100, the most the service gives, by default). */
  pageSize?: number;
  /** The first page to read (1 by default). */
  startPage?: number;
};

type Untyped = (url: string, init?: object) => Promise<{ data?: unknown; response: Response }>;

/**
 * Every item of a `{ items, meta }` list — customers, webhook endpoints, an endpoint's deliveries, events — page
 * after page, as an async iterator:
 *   for await (const customer of listItems(client, '/api/v1/platform-customers', { query: { search: 'acme' } })) …
 */
export async function* listItems<P extends ItemsListPath>(
  client: EbrcClient,
  path: P,
  params: ItemsListParams<P> = {} as ItemsListParams<P>,
  options: PageOptions = {},
): AsyncGenerator<ItemOf<P>, void, undefined> {
  const get = client.GET as unknown as Untyped;
  const limit = options.pageSize ?? 100;
  for (let page = options.startPage ?? 1; ; page++) {
    const { data } = await get(path, { params: { ...params, query: { ...params.query, page, limit } } });
    const body = data as { items: ItemOf<P>[]; meta: { totalPages: number } };
    yield* body.items;
    if (body.items.length === 0 || page >= body.meta.totalPages) return;
  }
}

/**
 * Every IRM of a customer (`{ data, meta: { total, page, limit, totalPages } }`), page after page. Each page is a
 * POST /api/v1/irm/refresh, which first pulls what the authority has new.
 */
export async function* listIrms(client: EbrcClient, query: IrmFilters, options: PageOptions = {}): AsyncGenerator<Irm, void, undefined> {
  const post = client.POST as unknown as Untyped;
  const limit = options.pageSize ?? 100;
  for (let page = options.startPage ?? 1; ; page++) {
    const { data } = await post('/api/v1/irm/refresh', { params: { query: { ...query, page, limit } }, body: {} });
    const body = data as { data: Irm[]; meta: { totalPages: number } };
    yield* body.data;
    if (body.data.length === 0 || page >= body.meta.totalPages) return;
  }
}

/** The URL of `rel="next"` in a Link header, if any. */
export function nextLink(link: string | null): string | undefined {
  if (!link) return undefined;
  for (const part of link.split(',')) {
    const match = /<([^>]*)>\s*;(.*)/.exec(part.trim());
    if (match && /\brel\s*=\s*"?next"?/.test(match[2]!)) return match[1];
  }
  return undefined;
}

/**
 * Every GenEBRC request of a customer (a plain array per page, the total in X-Total-Count, the pages in Link),
 * following `rel="next"` until there is none.
 */
export async function* listRequests(client: EbrcClient, query: RequestFilters, options: PageOptions = {}): AsyncGenerator<RequestRecord, void, undefined> {
  const get = client.GET as unknown as Untyped;
  const limit = options.pageSize ?? 100;
  for (let page = options.startPage ?? 1; ; ) {
    const { data, response } = await get('/api/v1/genebrc', { params: { query: { ...query, page, limit } } });
    const records = data as RequestRecord[];
    yield* records;
    const next = nextLink(response.headers.get('link'));
    if (next === undefined || records.length === 0) return;
    const nextPage = Number(new URL(next, 'http://link.invalid').searchParams.get('page'));
    if (!Number.isInteger(nextPage) || nextPage <= page) return;
    page = nextPage;
  }
}

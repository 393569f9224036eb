/** A list's page as its query asks for it: `page` from 1, `limit` rows a page (contract 2). */
export type PageRequest = { page: number; limit: number };

/** How many rows come before the page. */
export function offsetOf(query: PageRequest): number {
  return (query.page - 1) * query.limit;
}

/** The customers' envelope (contract 2), which the customer, webhook endpoint, delivery and event lists share. */
export function itemsPage<T>(items: T[], total: number, query: PageRequest) {
  return { items, meta: { totalItems: total, itemsPerPage: query.limit, totalPages: Math.ceil(total / query.limit), currentPage: query.page } };
}

/** The IRMs' envelope (contract 2), which the eBRC list shares. */
export function dataPage<T>(data: T[], total: number, query: PageRequest) {
  return { data, meta: { total, page: query.page, limit: query.limit, totalPages: Math.ceil(total / query.limit) } };
}

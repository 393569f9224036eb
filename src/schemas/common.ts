import { Type, type Static, type TSchema } from 'typebox';

/** A schema that also takes null, written as a JSON type list so validation errors stay readable. */
export function Nullable<T extends TSchema>(schema: T, options: Record<string, unknown> = {}) {
  const base = schema as unknown as { type: string };
  return Type.Unsafe<Static<T> | null>({ ...schema, ...options, type: [base.type, 'null'] });
}

export const DateTime = Type.String({ format: 'date-time' });
export const IsoDate = Type.String({ format: 'date', description: 'YYYY-MM-DD, UTC, inclusive', examples: ['2025-09-15'] });

export const Money = Type.Number({ description: 'Amount with at most two decimals, never negative (number(16,2))' });
export const Text = (maxLength: number, description?: string) => Type.String({ maxLength, ...(description ? { description } : {}) });

/** A name or title: not blank. */
export const NonBlank = '\\S';

/** A success response's schema with the description the OpenAPI reference shows for it (else "Default Response"). */
export function answer<T extends TSchema>(schema: T, description: string, examples?: Examples): T {
  // @fastify/swagger reads x-response-description from the resolved schema; a reference is described in place. Named
  // examples (x-examples) become the response's media `examples` in the OpenAPI document.
  return {
    ...schema,
    'x-response-description': description,
    ...('$ref' in schema ? { description } : {}),
    ...(examples === undefined ? {} : { 'x-examples': examples }),
  };
}

/** Named OpenAPI examples (media `examples`): a request example and the answer it gets share a name. */
export type Examples = Record<string, { summary: string; description?: string; value: unknown }>;

/** A request body schema with its named examples for the OpenAPI document (the validator ignores `x-examples`). */
export function withExamples<T extends TSchema>(schema: T, examples: Examples): T {
  return { ...schema, 'x-examples': examples };
}

/** The highest page a list serves: far beyond any real list, and its offset well within the database's integers. */
export const MAX_PAGE = 1_000_000;

export const PageQuery = {
  page: Type.Integer({ minimum: 1, maximum: MAX_PAGE, default: 1, description: `Page number, from 1 to ${MAX_PAGE}` }),
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 10, description: 'Items per page, 1 to 100' }),
};

/** A customers'-style envelope (contract 2) around a list of `items`. */
export function ItemsPage<T extends TSchema>(items: T) {
  return Type.Object({
    items: Type.Array(items),
    meta: Type.Object({
      totalItems: Type.Integer(),
      itemsPerPage: Type.Integer(),
      totalPages: Type.Integer(),
      currentPage: Type.Integer(),
    }),
  });
}

export const EmptyBody = Type.Object({}, { additionalProperties: false, description: 'An empty object' });

export const EMPTY_BODY_EXAMPLES = { empty: { summary: 'No fields', value: {} } } satisfies Examples;

// ---- Examples for the OpenAPI document (contract 12) ----
// The ids the examples share. Realistic values, in the shapes the service answers: test/http/openapi-examples.test.ts sends every request example
// to a service (with the ids it made substituted for these) and checks every answer example against its schema.

export const EXAMPLE_CUSTOMER_ID = '3689a0da-30aa-468e-b66d-e2faa29c8e79';
export const EXAMPLE_PLATFORM_ID = '65ab7b55-c2ea-44b4-a1d5-8fd7c5ab5855';
export const EXAMPLE_REQUEST_ID = 'EBRCGW202611250D5929735E94E798AB';
export const EXAMPLE_EBRC_NUMBER = 'EBRC202611250000000001';
export const EXAMPLE_WEBHOOK_ENDPOINT_ID = '0b7c6a4e-2f3d-4c1b-9a8e-5d6f7a8b9c0d';
export const EXAMPLE_EVENT_ID = 'evt_3q9c0f2kXbYp1nV7uLr8TzQmWd4sHa6e';

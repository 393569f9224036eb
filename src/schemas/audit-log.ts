import { Type } from 'typebox';
import { ACTOR_TYPES, AUDIT_ACTIONS } from '../domain/audit.ts';
import { IsoDate, ItemsPage, PageQuery } from './common.ts';

const NullableText = Type.Union([Type.String(), Type.Null()]);

export const AuditEntrySchema = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    at: Type.String({ format: 'date-time', description: 'When the change was made (UTC)' }),
    platformId: Type.Union([Type.String({ format: 'uuid' }), Type.Null()], { description: 'Null for an operator-wide entry (a refused sign-in)' }),
    actor: Type.Object({
      type: Type.Unsafe<(typeof ACTOR_TYPES)[number]>({ type: 'string', enum: [...ACTOR_TYPES] }),
      id: Type.Union([Type.String(), Type.Null()], { description: "The API key's id, the console user's id, the CLI's OS user; null for the admin token and the service" }),
      label: Type.Union([Type.String(), Type.Null()], { description: "The API key's prefix (never the key), the console user's e-mail" }),
    }),
    action: Type.String({ description: '`<resource>.<verb>`', examples: ['platform_customer.create'] }),
    target: Type.Object({ type: NullableText, id: NullableText }),
    outcome: Type.Unsafe<'succeeded' | 'failed'>({ type: 'string', enum: ['succeeded', 'failed'] }),
    ip: NullableText,
    userAgent: NullableText,
    requestId: Type.Union([Type.String(), Type.Null()], { description: 'The x-request-id of the request that made the change; null for background changes' }),
  },
  { additionalProperties: false },
);

export const AuditLogListSchema = ItemsPage(AuditEntrySchema);

/** One page of the audit log, as both lists answer it (OpenAPI example). */
export const AUDIT_LOG_PAGE_EXAMPLE = {
  page: {
    summary: 'A customer created with an API key',
    value: {
      items: [
        {
          id: '5f0c2a9e-7b1d-4c3e-9a8f-1e2d3c4b5a69',
          at: '2026-11-24T09:30:00.000Z',
          platformId: '0f3a6c2e-4b8d-4e1f-9a7c-5d2e8b1f3a6c',
          actor: { type: 'api_key', id: '8a1f3c2e-6b4d-4e9a-9c7b-2d5e8f0a1b3c', label: 'ebrc_live_a1b2' },
          action: 'platform_customer.create',
          target: { type: 'platform_customer', id: '3b7e1f4a-9c2d-4e8b-a6f5-0d1c2b3a4e5f' },
          outcome: 'succeeded',
          ip: '203.0.113.10',
          userAgent: 'acme-payments/1.4',
          requestId: '7c9e2f1a-3b4d-4a5e-8f6c-1d2e3f4a5b6c',
        },
      ],
      meta: { totalItems: 1, itemsPerPage: 10, totalPages: 1, currentPage: 1 },
    },
  },
};

const filters = {
  actorType: Type.Optional(Type.Unsafe<(typeof ACTOR_TYPES)[number]>({ type: 'string', enum: [...ACTOR_TYPES], description: 'Only entries by this kind of actor' })),
  action: Type.Optional(Type.Unsafe<(typeof AUDIT_ACTIONS)[number]>({ type: 'string', enum: [...AUDIT_ACTIONS], description: 'Only this action' })),
  targetType: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Only entries about this kind of resource (platform_customer, webhook_endpoint, …)' })),
  targetId: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Only entries about this resource' })),
  fromDate: Type.Optional(IsoDate),
  toDate: Type.Optional(IsoDate),
  format: Type.Optional(
    Type.Unsafe<'json' | 'csv'>({ type: 'string', enum: ['json', 'csv'], description: 'csv: every matching entry (not a page) as a CSV attachment, as `Accept: text/csv` asks' }),
  ),
};

export const AuditLogQuery = Type.Object({ ...PageQuery, ...filters }, { additionalProperties: false });

export const AdminAuditLogQuery = Type.Object(
  { ...PageQuery, ...filters, platformId: Type.Optional(Type.String({ format: 'uuid', description: "Only this platform's entries" })) },
  { additionalProperties: false },
);

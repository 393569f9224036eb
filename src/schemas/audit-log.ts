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

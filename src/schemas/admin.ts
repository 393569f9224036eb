import { Type } from 'typebox';
import { DateTime, EXAMPLE_PLATFORM_ID, ItemsPage, NonBlank, Nullable, PageQuery, type Examples } from './common.ts';
import { problemExample } from './problems.ts';
import { ConsoleRoleSchema, TwoFactorStatusSchema } from './console-users.ts';

// ---- Admin API (contract 10): the operator's platforms, API keys and console users, at /admin/v1 ----

export const AdminPlatformSchema = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    name: Type.String(),
    requireTwoFactor: Type.Boolean({ description: 'Whether every console user of the platform must sign in with a second factor' }),
    createdAt: DateTime,
  },
  { description: 'A platform: a tenant of this service, with its API keys, customers and console users' },
);

export const AdminCreatedPlatformSchema = Type.Object({
  platform: AdminPlatformSchema,
  apiKey: Type.String({ description: "The platform's first API key: shown in this answer only (only its SHA-256 hash is stored)" }),
});

export const AdminApiKeySchema = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    platformId: Type.String({ format: 'uuid' }),
    prefix: Type.String({ description: "The key's first characters (ebrc_test_ and 6 more), to tell keys apart; never the key" }),
    createdAt: DateTime,
    lastUsedAt: Nullable(DateTime, { description: 'When a request last used it (written at most once a minute per key); null if never' }),
    revokedAt: Nullable(DateTime, { description: 'When it was revoked; null while it works' }),
  },
  { description: 'An API key, never the key itself nor its hash' },
);

export const AdminIssuedKeySchema = Type.Object({
  id: Type.String({ format: 'uuid' }),
  apiKey: Type.String({ description: 'The new API key: shown in this answer only (only its SHA-256 hash is stored)' }),
  prefix: Type.String({ description: "The key's first characters, as the key list shows them" }),
  createdAt: DateTime,
});

export const ConsoleUserSchema = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    email: Type.String({ description: 'What the user signs in with; unique across every platform, ignoring case' }),
    platformId: Type.String({ format: 'uuid', description: 'The one platform the user sees in the console' }),
    role: ConsoleRoleSchema,
    disabled: Type.Boolean({ description: 'A disabled user cannot sign in, and was signed out when disabled' }),
    twoFactor: TwoFactorStatusSchema,
    createdAt: DateTime,
  },
  { description: "A user of the web console: one of a platform's staff (never the password or its hash)" },
);

export const AdminPlatformListSchema = ItemsPage(AdminPlatformSchema);
export const AdminApiKeyListSchema = ItemsPage(AdminApiKeySchema);
export const ConsoleUserListSchema = ItemsPage(ConsoleUserSchema);

export const AdminListQuery = Type.Object({ ...PageQuery }, { additionalProperties: false });

export const CreatePlatformBody = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 200, pattern: NonBlank, description: "The platform's name, 1 to 200 characters" }) },
  { additionalProperties: false },
);

export const CreateConsoleUserBody = Type.Object(
  {
    email: Type.String({ format: 'email', maxLength: 254, description: 'The e-mail address the user signs in with; unique across every platform, ignoring case' }),
    password: Type.String({ minLength: 12, maxLength: 1024, description: 'At least 12 characters; stored only as an scrypt hash' }),
    role: Type.Optional(ConsoleRoleSchema),
  },
  { additionalProperties: false },
);

export const UpdateConsoleUserBody = Type.Object(
  {
    disabled: Type.Optional(Type.Boolean({ description: 'true: the user cannot sign in, and its sessions end at once; false: it can again' })),
    role: Type.Optional(ConsoleRoleSchema),
    twoFactor: Type.Optional(Type.Null({ description: "null: forgets the user's second factor and recovery codes and ends its sessions (a lost phone); it signs in with the password alone, or sets it up again" })),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const PlatformParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100, description: 'The platform id' }) });
export const ApiKeyParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100, description: 'The API key id (not the key)' }) });
export const ConsoleUserParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100, description: 'The console user id' }) });

const EXAMPLE_API_KEY_ID = '8a1f3c2e-6b4d-4e9a-9c7b-2d5e8f0a1b3c';
const EXAMPLE_CONSOLE_USER_ID = 'c4e2a9b7-1d3f-4a6c-8e5b-7f9d0a2c4e6b';
const EXAMPLE_ADMIN_PLATFORM = { id: EXAMPLE_PLATFORM_ID, name: 'Acme Payments', requireTwoFactor: false, createdAt: '2026-11-24T09:00:00.000Z' };
const EXAMPLE_ADMIN_KEY = {
  id: EXAMPLE_API_KEY_ID,
  platformId: EXAMPLE_PLATFORM_ID,
  prefix: 'ebrc_test_4Gq8Lm',
  createdAt: '2026-11-24T09:05:00.000Z',
  lastUsedAt: '2026-11-25T01:37:03.000Z',
  revokedAt: null,
};
const EXAMPLE_CONSOLE_USER = {
  id: EXAMPLE_CONSOLE_USER_ID,
  email: 'ops@acme-payments.example',
  platformId: EXAMPLE_PLATFORM_ID,
  role: 'owner',
  disabled: false,
  twoFactor: { enrolled: true, enrolledAt: '2026-11-24T09:20:00.000Z' },
  createdAt: '2026-11-24T09:10:00.000Z',
};
const pageOf = (item: unknown) => ({ items: [item], meta: { totalItems: 1, itemsPerPage: 10, totalPages: 1, currentPage: 1 } });

export const ADMIN_EXAMPLES = {
  createPlatform: {
    request: { platform: { summary: 'A new platform', value: { name: 'Acme Payments' } } },
    created: {
      platform: {
        summary: 'The platform and its first API key (shown this once)',
        value: { platform: EXAMPLE_ADMIN_PLATFORM, apiKey: 'ebrc_test_3T79rkWNQkezDnm6JmvV19dsSquB' },
      },
    },
  },
  platform: { platform: { summary: 'A platform', value: EXAMPLE_ADMIN_PLATFORM } },
  platformList: { page: { summary: 'The first page, newest first', value: pageOf(EXAMPLE_ADMIN_PLATFORM) } },
  issueKey: {
    request: { empty: { summary: 'No fields', value: {} } },
    issued: {
      empty: {
        summary: 'The new key (shown this once)',
        value: { id: EXAMPLE_API_KEY_ID, apiKey: 'ebrc_test_4Gq8LmXw2RkP9vTnYc7HdJs5BeFa', prefix: 'ebrc_test_4Gq8Lm', createdAt: '2026-11-24T09:05:00.000Z' },
      },
    },
  },
  key: { key: { summary: 'A key in use', value: EXAMPLE_ADMIN_KEY } },
  keyList: { page: { summary: "The platform's keys, newest first", value: pageOf(EXAMPLE_ADMIN_KEY) } },
  revokeKey: {
    request: { empty: { summary: 'No fields', value: {} } },
    revoked: { empty: { summary: 'The key, revoked: refused from the next request on', value: { ...EXAMPLE_ADMIN_KEY, revokedAt: '2026-11-25T10:00:00.000Z' } } },
    already: {
      already: {
        summary: 'Revoked before',
        value: problemExample('api_key_already_revoked', `API key ${EXAMPLE_API_KEY_ID} (ebrc_test_4Gq8Lm…) was already revoked at 2026-11-25T10:00:00.000Z; nothing changed.`),
      },
    },
  },
  createUser: {
    request: {
      user: { summary: 'A console user (the platform\'s first: its owner)', value: { email: 'ops@acme-payments.example', password: 'correct-horse-battery-staple' } },
    },
    created: { user: { summary: 'The user, who can sign in to the console', value: { ...EXAMPLE_CONSOLE_USER, twoFactor: { enrolled: false, enrolledAt: null } } } },
    refused: {
      shortPassword: {
        summary: 'Refused: the password is too short',
        value: problemExample('validation_failed', 'The request has an invalid field: password must be at least 12 characters long.', [
          { path: '/password', code: 'invalid_length', message: 'password must be at least 12 characters long.' },
        ]),
      },
    },
    taken: {
      taken: {
        summary: 'The e-mail address is already used',
        value: problemExample('console_user_email_taken', 'A console user with the e-mail ops@acme-payments.example already exists (e-mail addresses are unique, ignoring case).', [
          { path: '/email', code: 'console_user_email_taken', message: 'Another console user has this e-mail address.' },
        ]),
      },
    },
  },
  userList: { page: { summary: "The platform's console users, newest first", value: pageOf(EXAMPLE_CONSOLE_USER) } },
  updateUser: {
    request: {
      disable: { summary: 'Disable the user', value: { disabled: true } },
      role: { summary: 'Make the user a viewer', value: { role: 'viewer' } },
      resetTwoFactor: { summary: "Reset the user's second factor (a lost phone)", value: { twoFactor: null } },
    },
    updated: {
      disable: { summary: 'Disabled: signed out, and cannot sign in', value: { ...EXAMPLE_CONSOLE_USER, disabled: true } },
      role: { summary: 'A viewer now: reads only', value: { ...EXAMPLE_CONSOLE_USER, role: 'viewer' } },
      resetTwoFactor: { summary: 'No second factor: signed out, signs in with the password', value: { ...EXAMPLE_CONSOLE_USER, twoFactor: { enrolled: false, enrolledAt: null } } },
    },
  },
  updatePlatform: {
    request: { require: { summary: 'Require a second factor of every console user', value: { requireTwoFactor: true } } },
    updated: { require: { summary: 'The platform, requiring it', value: { ...EXAMPLE_ADMIN_PLATFORM, requireTwoFactor: true } } },
  },
} satisfies Record<string, Examples | Record<string, Examples>>;

// ---- The key ring's use (contract 14): GET /admin/v1/encryption-status ----

const Count = Type.Integer({ minimum: 0 });

export const EncryptionStatusSchema = Type.Object(
  {
    currentKeyId: Type.String({ description: 'The key new values are sealed with: the first of ENCRYPTION_KEYS' }),
    keys: Type.Array(
      Type.Object({
        keyId: Type.String(),
        values: Count,
        current: Type.Boolean(),
        inRing: Type.Boolean({ description: "Whether this process's key ring holds the key" }),
      }),
      { description: 'Every key of the ring, and every key id a sealed value names, with how many values use it' },
    ),
    columns: Type.Array(
      Type.Object({
        table: Type.String(),
        column: Type.String(),
        what: Type.String(),
        keys: Type.Record(Type.String(), Count, { description: 'Sealed values of the column per key id' }),
      }),
    ),
  },
  { description: 'How many sealed values use each key of the ring; a key other than the current one can be dropped once it counts 0' },
);

export const ENCRYPTION_STATUS_EXAMPLE = {
  currentKeyId: '2026-11',
  keys: [
    { keyId: '2026-11', values: 1180, current: true, inRing: true },
    { keyId: 'default', values: 20, current: false, inRing: true },
  ],
  columns: [
    { table: 'platform_customers', column: 'authority_credentials', what: 'authority portal logins', keys: { '2026-11': 590, default: 10 } },
    { table: 'platform_customers', column: 'authority_api_credentials', what: 'authority API credential sets', keys: { '2026-11': 590, default: 10 } },
  ],
};

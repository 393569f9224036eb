import { Type, type Static } from 'typebox';
import { DateTime, EXAMPLE_CUSTOMER_ID, EXAMPLE_PLATFORM_ID, NonBlank, Nullable, PageQuery, type Examples } from './common.ts';

export const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100, description: 'The platform customer id' }) });

export const PlatformCustomerSchema = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    name: Type.String(),
    email: Type.String({ format: 'email' }),
    type: Type.Literal('customer'),
    companyName: Type.String(),
    address: Nullable(Type.String()),
    platformId: Type.String({ format: 'uuid', description: 'The platform that owns this customer' }),
    isActive: Type.Boolean(),
    iecCode: Nullable(Type.String(), { description: "The customer's IEC, once the authority has told it" }),
    authorityVerifiedAt: Nullable(Type.String({ format: 'date-time' }), {
      description: 'When the authority credentials were last validated; null until then',
    }),
    authorityCredentialsStatus: Type.Union([Type.Literal('unverified'), Type.Literal('valid'), Type.Literal('invalid')], {
      description:
        'unverified until a credential check succeeds; valid after one; invalid once the authority refuses the stored credentials ' +
        '(IRM refresh, push and eBRCs then answer 409 customer_not_verified until a new check succeeds)',
    }),
    authorityApiCredentials: Nullable(
      Type.Object({
        iecCode: Type.String(),
        clientId: Type.String(),
        envelopeProfile: Type.String({ description: 'spec-sha256 or java-pbkdf2' }),
        updatedAt: DateTime,
      }),
      { description: 'What is shown of the stored API credential set: never a secret or a key. Null until one is stored.' },
    ),
    createdAt: DateTime,
    updatedAt: DateTime,
  },
  { $id: 'PlatformCustomer' },
);
export type PlatformCustomer = Static<typeof PlatformCustomerSchema>;
export const PlatformCustomerRef = Type.Unsafe<PlatformCustomer>(Type.Ref('PlatformCustomer'));

export const CreatePlatformCustomerBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200, pattern: NonBlank }),
    email: Type.String({ format: 'email', maxLength: 254 }),
    type: Type.Optional(Type.Literal('customer', { default: 'customer' })),
    companyName: Type.String({ minLength: 1, maxLength: 200, pattern: NonBlank }),
    address: Type.Optional(Nullable(Type.String({ maxLength: 500 }))),
  },
  { additionalProperties: false },
);

export const CustomerListQuery = Type.Object(
  {
    ...PageQuery,
    search: Type.Optional(
      Type.String({ maxLength: 200, description: 'Case-insensitive partial match on name or email; % and _ match themselves' }),
    ),
  },
  { additionalProperties: false },
);

export const CustomerListSchema = Type.Object({
  items: Type.Array(PlatformCustomerRef),
  meta: Type.Object({
    totalItems: Type.Integer(),
    itemsPerPage: Type.Integer(),
    totalPages: Type.Integer(),
    currentPage: Type.Integer(),
  }),
});

/**
 * An API credential set as the authority's portal gives it (client_Id, client_secret, x-Api-Key, dgftpublicKey,
 * userprivateKey) or in this service's names; keys as base64 DER, PEM or a .cer certificate. Read field by field by
 * the credential set's own parser, which names the field of any problem.
 */
export const ApiCredentialSetBody = Type.Object(
  {
    iecCode: Type.String({ minLength: 1, maxLength: 20, description: 'The IEC the set belongs to' }),
    clientId: Type.Optional(Type.String({ maxLength: 500 })),
    client_Id: Type.Optional(Type.String({ maxLength: 500 })),
    clientSecret: Type.Optional(Type.String({ maxLength: 500 })),
    client_secret: Type.Optional(Type.String({ maxLength: 500 })),
    apiKey: Type.Optional(Type.String({ maxLength: 500 })),
    'x-Api-Key': Type.Optional(Type.String({ maxLength: 500 })),
    authorityPublicKey: Type.Optional(Type.String({ maxLength: 20_000 })),
    dgftpublicKey: Type.Optional(Type.String({ maxLength: 20_000 })),
    userPrivateKey: Type.Optional(Type.String({ maxLength: 20_000 })),
    userprivateKey: Type.Optional(Type.String({ maxLength: 20_000 })),
    envelopeProfile: Type.Optional(Type.Union([Type.Literal('spec-sha256'), Type.Literal('java-pbkdf2')])),
  },
  { additionalProperties: false },
);

export const CheckCredentialsBody = Type.Object(
  {
    authorityUsername: Type.String({ minLength: 1, maxLength: 200 }),
    authorityPassword: Type.String({ minLength: 1, maxLength: 200, writeOnly: true }),
  },
  { additionalProperties: false },
);

const EXAMPLE_NEW_CUSTOMER = {
  id: EXAMPLE_CUSTOMER_ID,
  name: 'Asha Mehta',
  email: 'accounts@mehta-exports.example',
  type: 'customer' as const,
  companyName: 'Mehta Exports Pvt Ltd',
  address: '14 Nehru Place, New Delhi 110019',
  platformId: EXAMPLE_PLATFORM_ID,
  isActive: true,
  iecCode: null,
  authorityVerifiedAt: null,
  authorityCredentialsStatus: 'unverified' as const,
  authorityApiCredentials: null,
  createdAt: '2026-11-25T01:37:03.935Z',
  updatedAt: '2026-11-25T01:37:03.935Z',
};

export const EXAMPLE_CUSTOMER: PlatformCustomer = {
  ...EXAMPLE_NEW_CUSTOMER,
  iecCode: '0599001001',
  authorityVerifiedAt: '2026-11-25T01:37:04.174Z',
  authorityCredentialsStatus: 'valid',
  authorityApiCredentials: {
    iecCode: '0599001001',
    clientId: 'sandbox-0599001001-c291e853',
    envelopeProfile: 'spec-sha256',
    updatedAt: '2026-11-25T01:37:04.174Z',
  },
  updatedAt: '2026-11-25T01:37:04.174Z',
};

export const PLATFORM_CUSTOMER_EXAMPLES = {
  createCustomer: {
    request: {
      customer: {
        summary: 'An exporter',
        value: { name: 'Asha Mehta', email: 'accounts@mehta-exports.example', companyName: 'Mehta Exports Pvt Ltd', address: '14 Nehru Place, New Delhi 110019' },
      },
    },
    created: { customer: { summary: 'Created, not yet verified with the authority', value: EXAMPLE_NEW_CUSTOMER } },
  },
  customer: { customer: { summary: 'A verified customer', value: EXAMPLE_CUSTOMER } },
  customerList: {
    page: {
      summary: 'The first page',
      value: { items: [EXAMPLE_CUSTOMER], meta: { totalItems: 1, itemsPerPage: 10, totalPages: 1, currentPage: 1 } },
    },
  },
  checkCredentials: {
    request: {
      sandbox: {
        summary: 'A sandbox test account',
        description: 'demo.exporter signs in at the sandbox with Sandbox@123 (AUTHORITY_MODE=sandbox)',
        value: { authorityUsername: 'demo.exporter', authorityPassword: 'Sandbox@123' },
      },
    },
    verified: { sandbox: { summary: 'Verified: the customer with its IEC', value: EXAMPLE_CUSTOMER } },
  },
  apiCredentials: {
    request: {
      portalNames: {
        summary: 'The set as the authority portal gives it',
        description: 'Keys as base64 DER (these are example keys, made for this document)',
        value: {
          iecCode: '0599001001',
          client_Id: 'dgft-0599001001-client',
          client_secret: 'c2VjcmV0LWV4YW1wbGUtb25seQ',
          'x-Api-Key': 'a1b2c3d4e5f60718293a4b5c6d7e8f90',
          dgftpublicKey: 'MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAtPcEcxPRaSZ7reyXuvsl7rbGYROsttEei8CLyeBKzhzIhWj8aFoqqhFWdvXtk0+u/8NA5cbtbbnJgX6EK33+GC0mpndui7zBSdWCCbHZacyUOThTqJOPlODZ/sDizj5egaYazuFWOcdI0ejI10OGOOvpOn/dRK+uijfE9BPJKE1V/rSknKcty4HZyEDBU+V7CEX1qCFKGudvwlmRc/PDNU0SJh6qe/nSYKeYLJS/5liEcujLHruqxhLO1hn35v7CRjH/piAZ9CPK+7B1zqlRlW4lOQsQyV8ecgl+SSJpnNHUfTUT/e8UBn/vJUIZarciYy69U9P83aurZkNPG5bfIQIDAQAB',
          userprivateKey: 'MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC09wRzE9FpJnut7Je6+yXutsZhE6y20R6LwIvJ4ErOHMiFaPxoWiqqEVZ29e2TT67/w0Dlxu1tucmBfoQrff4YLSamd26LvMFJ1YIJsdlpzJQ5OFOok4+U4Nn+wOLOPl6BphrO4VY5x0jR6MjXQ4Y46+k6f91Er66KN8T0E8koTVX+tKScpy3LgdnIQMFT5XsIRfWoIUoa52/CWZFz88M1TRImHqp7+dJgp5gslL/mWIRy6Mseu6rGEs7WGffm/sJGMf+mIBn0I8r7sHXOqVGVbiU5CxDJXx5yCX5JImmc0dR9NRP97xQGf+8lQhlqtyJjLr1T0/zdq6tmQ08blt8hAgMBAAECggEAJDu5VllHeqhL5z0R/ExBAhTyj4li8Y/Zb93zn04bbD1zINMuhq5XEIo8J8GB+hbgUTGFEvzLmUazxAvS5uppL+oKbRZIug3nHaN0UACeKYLewr42cfBptUN4Inv4bZcrUQYzI+0WWKdAO1dCr2dDvq3tmtrzMMeESQR1mPFFO545HxMZPkWRQeGP8wYqUQBjpmKF1MRB5a8udpGM3MG93lFeCtum6M0PjmI1lNzgM7TfpuVMtUFfKViMDg0dsh7TJ8CggfOOjUkfWS0eG5RwiGXEwweWqK8o0VOa0s1dDwJc+k1J+fDV66JQFN9QN/9lZz5XeIr2+7+GUV0V7YQZKQKBgQD9LbNV0kX497Rz0yTNI5dlxBH+TUrbdwzASS9HIijupUDBGSGjQhuIjJs2lpCBisLTYO8xk5ufml/+SyvHkZbUIR1C/UILj5kwsg70GbTeSrR+ZKdVMJq6U53GXXzpKpSH3EJ0CuTVnwuIRSBRqyj6PrY3oeMDP8sW0H031f9WwwKBgQC2+0v7nZIbDAMNS85R7V/m279L/+xFAi4GpTd9WYGUnDydSdL4i9i9pVkNmO8dJEZNOf1Gdl2lR5A3iiqOJhsAAQg++E7FS3V7OR3zUKC27vypqZRbGUwlXiEwtrHfkOFVRx9BqCXVH4oGDDIRlagxnIkXVWuKjmqCYpfeLRZ8SwKBgQCMzMCiZtlxN1jM3UznJPcKqnsTQSrzWIbn3QuE9NNsvMyBVxek8pvbWc7sEdn1oRTud0cu/BcdML5X7rg/OZF3EZ9zZOM5CLg6I5w7VpyGz2cHr7R7pRc3rk7dRZq1FXAbCnyOioxu3Q+NzlvF73lPilbOI6LbaLvqSTKKPeHN/wKBgDuoTMqZQgRtcyVHnNnbMZQ7+u+VXfvVzRm/jgrhPr0r/xss8Yq1VZHnMdScEwGGTSFqkagCeV+kqGFjO6Kiy9TBgWW+YTgz9Paa1af5lpxt6JSMRGE7KzdXrCyMtAt22fCKwqcOYl9M7Bwyp7RR/cdHCO9Bm1FOQ22FJYx7WMRnAoGAQqi6ExiU2qCc9EbzHrwMRR8I3cqHKbrfQgl1SFkOIT05gLmWx6GsJte5S3WB6GN3XPnvrvpJ+YBN9MvMqawbEu03GIhhDLNt/1y5A5U8NkwUWg9BPwXpOIUeUsMzujofsq6NSa96GNC1ZnttaL+dl3ko+9RNXiuRCnNvym8JirE=',
        },
      },
    },
    stored: {
      portalNames: {
        summary: 'The customer, showing the stored set (never its secrets)',
        value: {
          ...EXAMPLE_NEW_CUSTOMER,
          authorityApiCredentials: { iecCode: '0599001001', clientId: 'dgft-0599001001-client', envelopeProfile: 'spec-sha256', updatedAt: '2026-11-25T01:40:12.002Z' },
          updatedAt: '2026-11-25T01:40:12.002Z',
        },
      },
    },
  },
} satisfies Record<string, Examples | Record<string, Examples>>;

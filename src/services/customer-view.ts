import type { Static } from 'typebox';
import type { PlatformCustomerSchema } from '../schemas/platform-customers.ts';
import type { ShownCustomerRow } from '../store/customers.ts';

/** A platform customer as the API shows it. */
export type Customer = Static<typeof PlatformCustomerSchema>;

export function toCustomer(row: ShownCustomerRow): Customer {
  return {
    id: row.id,
    name: row.name,
    email: row.email,
    type: 'customer',
    companyName: row.company_name,
    address: row.address,
    platformId: row.platform_id,
    isActive: row.is_active,
    iecCode: row.iec_code,
    authorityVerifiedAt: row.authority_verified_at?.toISOString() ?? null,
    authorityCredentialsStatus: row.authority_credentials_status,
    authorityApiCredentials:
      row.authority_api_credentials_updated_at === null
        ? null
        : {
            iecCode: row.authority_api_iec_code!,
            clientId: row.authority_api_client_id!,
            envelopeProfile: row.authority_api_envelope_profile!,
            updatedAt: row.authority_api_credentials_updated_at.toISOString(),
          },
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

import { randomUUID } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import { insertCustomer } from '../../src/store/customers.ts';
import { insertPlatform } from '../../src/store/platforms.ts';
import type { Schema } from '../../src/store/schema.ts';

/**
 * One large customer among 29 small ones, as in production: a platform, 20,000 IRMs over 700 days (18,000 the large
 * customer's) and 6,000 processed GenEBRC requests (5,400 its), then the statistics autovacuum would keep. The large
 * customer's statistics are what make a LIMIT parameter's generic plan look dearer than a custom one.
 */
export async function seedSkewedLists(db: Kysely<Schema>, requestHours = 1): Promise<{ platformId: string; big: string }> {
  const platformId = randomUUID();
  await insertPlatform(db, { id: platformId, name: 'Skewed lists' });
  const customers = Array.from({ length: 30 }, () => randomUUID());
  for (const [index, id] of customers.entries()) {
    await insertCustomer(db, { id, platformId, name: `Customer ${index}`, email: `skewed-${index}@example.com`, type: 'customer', companyName: 'Co', address: null });
  }
  const big = customers[0]!;
  await sql`
    insert into irms (id, platform_id, platform_customer_id, irm_number, irm_issue_date, ifsc_code, remittance_ad_code,
      remittance_date, remittance_fcc, remittance_fcc_amount, orm_amount_fcc, irm_available_amt, irm_utilized_amt, iec_code,
      pan_number, remitter_name, remitter_country, purpose_of_remittance, authority_status)
    select gen_random_uuid(), ${platformId}::uuid, customer, 'IR' || g, date '2026-01-01' - (g % 700), 'HDFC0000001', '0510001',
      date '2026-01-01' - (g % 700), 'USD', 10, 0, 10, 0, '0599001001', 'ABCDE1234F', 'Remitter', 'US', 'P0102', 'F'
    from generate_series(1, 20000) g,
      lateral (select case when g <= 18000 then ${big}::uuid else (${customers}::uuid[])[2 + g % 29] end as customer) as owner`.execute(db);
  await sql`
    insert into genebrc_requests (id, platform_id, platform_customer_id, request_id, iec_number, record_res_count, upload_type,
      declaration_flag, status, created_at)
    select gen_random_uuid(), ${platformId}::uuid, customer, 'EBRCGWSKEWED' || g, '0599001001', 1, '101', 'Y', 'PROCESSED',
      timestamptz '2026-01-01 00:00:00Z' - g * ${requestHours} * interval '1 hour'
    from generate_series(1, 6000) g,
      lateral (select case when g <= 5400 then ${big}::uuid else (${customers}::uuid[])[2 + g % 29] end as customer) as owner`.execute(db);
  await sql`vacuum analyze`.execute(db);
  return { platformId, big };
}

/** The tables of sandbox/migrations, as Kysely sees them: numeric as exact decimal text, date as 'YYYY-MM-DD'. */
import type { ColumnType, Generated } from 'kysely';
import type { EnvelopeProfile } from '../../src/authority/protocol/envelope.ts';
import type { WireErrorDetail } from '../../src/authority/protocol/messages.ts';
import type { LineStatus } from '../../src/domain/request-state.ts';

/** A jsonb column: written as JSON text, read as the parsed value. */
type Json<T> = ColumnType<T, string, string>;

export type AuthorityKeyTable = {
  singleton: Generated<boolean>;
  private_key: string;
  created_at: Generated<Date>;
};

export type CredentialSetsTable = {
  account_username: string;
  iec_code: string;
  client_id: string;
  client_secret: string;
  api_key: string;
  user_private_key: string;
  envelope_profile: EnvelopeProfile | null;
  created_at: Generated<Date>;
};

export type AccessTokensTable = {
  token_hash: string;
  client_id: string;
  expires_at: Date;
};

export type IrmsTable = {
  irm_number: string;
  account_username: string;
  seq: number;
  irm_issue_date: string;
  ifsc_code: string;
  remittance_ad_code: string;
  remittance_date: string;
  remittance_fcc: string;
  remittance_fcc_amount: string;
  orm_amount_fcc: string;
  available_amount: string;
  utilised_amount: string;
  iec_code: string;
  pan_number: string;
  remitter_name: string;
  remitter_country: string;
  purpose_of_remittance: string;
  /** F, A (amended by the bank) or C (cancelled by the bank). */
  irm_status: ColumnType<'F' | 'A' | 'C', 'F' | 'A' | 'C' | undefined, 'F' | 'A' | 'C'>;
};

export type RequestsTable = {
  request_id: string;
  account_username: string;
  ack_id: string | null;
  ack_status: 'Validated' | 'Failed';
  record_res_count: number;
  error_details: Json<WireErrorDetail[]>;
  received_at: Date;
  processed_at: Date | null;
};

export type RequestLinesTable = {
  request_id: string;
  serial_no: number;
  irm_number: string;
  bill_no: string;
  sb_cum_invoice_number: string;
  sb_cum_invoice_date: string;
  currency: string;
  mapped_amount: string;
  status: ColumnType<LineStatus, LineStatus | undefined, LineStatus>;
  ebrc_number: string | null;
  ebrc_date: string | null;
  error_details: ColumnType<WireErrorDetail[], string | undefined, string>;
  /** Set when the eBRC was cancelled on the portal (or by the bank): fetchEBRCDetails then reports it CANCELLED. */
  ebrc_cancelled_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
};

export type SandboxSchema = {
  'authority_sandbox.authority_key': AuthorityKeyTable;
  'authority_sandbox.credential_sets': CredentialSetsTable;
  'authority_sandbox.access_tokens': AccessTokensTable;
  'authority_sandbox.irms': IrmsTable;
  'authority_sandbox.requests': RequestsTable;
  'authority_sandbox.request_lines': RequestLinesTable;
};

import type { ColumnType, Generated, GeneratedAlways } from 'kysely';
import type { ErrorDetail } from '../domain/push-rules.ts';

/** A timestamptz column: read as Date, written as Date or left to its default. */
type Timestamp = ColumnType<Date, Date | undefined, Date>;
/** A numeric(16,2) column: read as its exact decimal text, written as text. */
type Numeric = ColumnType<string, string, string>;
/** A jsonb column: read parsed, written as JSON text. */
type Json<T> = ColumnType<T, string, string>;

export type PlatformsTable = {
  id: string;
  name: string;
  require_two_factor: Generated<boolean>;
  created_at: Timestamp;
};

export type ApiKeysTable = {
  id: string;
  platform_id: string;
  key_hash: string;
  display_prefix: string;
  created_at: Timestamp;
  revoked_at: Date | null;
  last_used_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
};

export type PlatformCustomersTable = {
  id: string;
  platform_id: string;
  name: string;
  email: string;
  type: string;
  company_name: string;
  address: string | null;
  is_active: Generated<boolean>;
  iec_code: string | null;
  authority_verified_at: Date | null;
  authority_username: string | null;
  authority_credentials: string | null;
  irms_pulled_at: Date | null;
  /** The sealed API credential set, and what is shown of it. */
  authority_api_credentials: ColumnType<string | null, string | null | undefined, string | null>;
  authority_api_iec_code: ColumnType<string | null, string | null | undefined, string | null>;
  authority_api_client_id: ColumnType<string | null, string | null | undefined, string | null>;
  authority_api_envelope_profile: ColumnType<string | null, string | null | undefined, string | null>;
  authority_api_credentials_updated_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  authority_credentials_status: ColumnType<'unverified' | 'valid' | 'invalid', 'unverified' | 'valid' | 'invalid' | undefined, 'unverified' | 'valid' | 'invalid'>;
  created_at: Timestamp;
  updated_at: Timestamp;
  /** lower(name) and lower(email), kept by the database for the search. */
  name_lower: GeneratedAlways<string>;
  email_lower: GeneratedAlways<string>;
};

export type IrmsTable = {
  id: string;
  platform_id: string;
  platform_customer_id: string;
  irm_number: string;
  irm_issue_date: string;
  ifsc_code: string;
  remittance_ad_code: string;
  remittance_date: string;
  remittance_fcc: string;
  remittance_fcc_amount: Numeric;
  orm_amount_fcc: Numeric;
  irm_available_amt: Numeric;
  irm_utilized_amt: Numeric;
  iec_code: string;
  pan_number: string;
  remitter_name: string;
  remitter_country: string;
  purpose_of_remittance: string;
  /** The authority's irmStatus: F, A, C (cancelled) or another letter it sent. */
  authority_status: ColumnType<string, string | undefined, string>;
  created_at: Timestamp;
  updated_at: Timestamp;
};

/** The eBRC register (migration 0016). */
export type EbrcsTable = {
  id: string;
  platform_id: string;
  platform_customer_id: string;
  ebrc_number: string;
  ebrc_date: string;
  irm_number: string;
  sb_cum_invoice_number: string;
  sb_cum_invoice_date: string;
  realised_value_fcc: Numeric;
  currency: string;
  iec_code: string;
  request_id: string | null;
  source: 'this_service' | 'elsewhere';
  status: 'generated' | 'cancelled';
  created_at: Timestamp;
  updated_at: Timestamp;
};

/** Reconciliation runs (migration 0017). */
export type ReconciliationsTable = {
  id: string;
  platform_id: string;
  platform_customer_id: string;
  trigger: 'schedule' | 'request';
  status: 'running' | 'completed' | 'failed';
  started_at: Date;
  finished_at: Date | null;
  irms_updated: ColumnType<number, number | undefined, number>;
  irms_cancelled: ColumnType<number, number | undefined, number>;
  ebrcs_discovered: ColumnType<number, number | undefined, number>;
  ebrcs_cancelled: ColumnType<number, number | undefined, number>;
  error: string | null;
};

export type IrmDayCountsTable = {
  platform_customer_id: string;
  irm_issue_date: string;
  irms: number;
};

export type IrmMonthCountsTable = {
  platform_customer_id: string;
  /** The month's first day. */
  irm_month: string;
  irms: number;
};

export type IrmCustomerCountsTable = {
  platform_customer_id: string;
  irms: number;
};

export type GenebrcRequestStatusCountsTable = {
  platform_customer_id: string;
  status: string;
  requests: number;
};

export type GenebrcRequestDayCountsTable = {
  platform_customer_id: string;
  created_day: string;
  status: string;
  requests: number;
};

export type GenebrcRequestMonthCountsTable = {
  platform_customer_id: string;
  /** The month's first day (UTC). */
  created_month: string;
  status: string;
  requests: number;
};

export type GenebrcRequestsTable = {
  id: string;
  platform_id: string;
  platform_customer_id: string;
  request_id: string;
  iec_number: string;
  record_res_count: number;
  upload_type: string;
  declaration_flag: string;
  status: string;
  authority_ack_id: string | null;
  error_details: Json<ErrorDetail[]>;
  processed_at: Date | null;
  created_at: Timestamp;
  updated_at: Timestamp;
};

export type GenebrcRequestLinesTable = {
  request_id: string;
  line_index: number;
  serial_no: number;
  irm_id: string | null;
  irm_number: string;
  sb_cum_invoice_number: string;
  mapped_amount: Numeric;
  reserved: boolean;
  payload: Json<Record<string, unknown>>;
  status: string;
  ebrc_number: string | null;
  ebrc_date: string | null;
  error_details: Json<ErrorDetail[]>;
};

/** A final request's record as the list shows it, rendered once (migration 0025). */
export type GenebrcRequestRecordsTable = {
  request_id: string;
  record: string;
};

export type IdempotencyKeysTable = {
  platform_id: string;
  key: string;
  fingerprint: string;
  state: 'running' | 'done';
  status_code: number | null;
  response_body: string | null;
  /** Which claim holds a running key; the work it guards links its resource only under this claim. */
  claim_id: string | null;
  /** What the guarded work committed (a request, a customer), linked in the work's own transaction. */
  resource_id: string | null;
  created_at: Timestamp;
  expires_at: Date;
};

export type InstallationSettingsTable = {
  name: string;
  value: string;
  created_at: Timestamp;
};

export type EventsTable = {
  seq: GeneratedAlways<number>;
  id: string;
  platform_id: string;
  platform_customer_id: string | null;
  type: string;
  data: Json<Record<string, unknown>>;
  endpoint_id: string | null;
  created_at: Timestamp;
};

export type EventQueueTable = {
  seq: number;
  event_id: string;
  platform_id: string;
  type: string;
  endpoint_id: string | null;
  created_at: Timestamp;
};

export type EventDayCountsTable = {
  platform_id: string;
  platform_customer_key: string;
  type: string;
  created_day: string;
  events: number;
};

export type WebhookEndpointsTable = {
  id: string;
  platform_id: string;
  url: string;
  description: string | null;
  enabled_events: Json<string[]>;
  status: 'enabled' | 'disabled';
  disabled_reason: string | null;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  failing_since: Date | null;
  attempt_count: ColumnType<number, never, never>;
  created_at: Timestamp;
  updated_at: Timestamp;
};

export type WebhookAttemptsTable = {
  id: string;
  endpoint_id: string;
  event_id: string;
  attempt: number;
  retry: number;
  status: 'pending' | 'succeeded' | 'failed';
  response_status: number | null;
  response_body: string | null;
  duration_ms: number | null;
  error: string | null;
  created_at: Timestamp;
  next_attempt_at: Date | null;
};

export type BulkUploadProblem = { row: number | null; column: string | null; code: string; message: string };

export type BulkUploadsTable = {
  id: string;
  platform_id: string;
  platform_customer_id: string;
  status: 'validating' | 'rejected' | 'pushing' | 'completed';
  file_name: string;
  file_sha256: string;
  file_content: ColumnType<Uint8Array | null, Uint8Array | null | undefined, Uint8Array | null>;
  upload_type: string;
  declaration_flag: string;
  row_count: ColumnType<number | null, number | null | undefined, number | null>;
  rows_done: Generated<number>;
  errors: ColumnType<BulkUploadProblem[], string | undefined, string>;
  created_at: Timestamp;
  updated_at: Timestamp;
};

export type BulkUploadPushesTable = {
  upload_id: string;
  push_index: number;
  spreadsheet_rows: Json<number[]>;
  lines: Json<Record<string, unknown>[]>;
  request_id: ColumnType<string | null, string | null | undefined, string | null>;
  ack_status: ColumnType<'Validated' | 'Failed' | null, 'Validated' | 'Failed' | null | undefined, 'Validated' | 'Failed' | null>;
  errors: ColumnType<BulkUploadProblem[], string | undefined, string>;
};

export type ConsoleUsersTable = {
  id: string;
  platform_id: string;
  email: string;
  password_hash: string;
  disabled: Generated<boolean>;
  failed_sign_ins: Generated<number>;
  last_failed_sign_in_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  /** owner | operator | viewer (migration 0021). */
  role: Generated<string>;
  /** The TOTP secret sealed by the credentials vault; set (and not yet enrolled) while an enrolment is under way. */
  totp_secret: ColumnType<string | null, string | null | undefined, string | null>;
  two_factor_enrolled_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  /** The last TOTP time step accepted: a code is good once. */
  last_totp_step: ColumnType<number | null, number | null | undefined, number | null>;
  failed_codes: Generated<number>;
  last_failed_code_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
  /** The IANA time zone of the user's e-mail (migration 0023). */
  time_zone: Generated<string>;
  /** Whether the user gets the monthly report e-mail (migration 0024). */
  monthly_report: Generated<boolean>;
};

export type ConsoleRecoveryCodesTable = {
  user_id: string;
  /** SHA-256 of the code (random, 50 bits): the code itself is shown once and never stored. */
  code_hash: Uint8Array;
  used_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
};

export type ConsoleSessionsTable = {
  /** SHA-256 of the session cookie's token: the token itself is never stored. */
  token_hash: Uint8Array;
  user_id: string;
  created_at: Timestamp;
  expires_at: Date;
  /** False while a user enrolled in two factors has given the password but not yet the code. */
  second_factor_passed: Generated<boolean>;
  last_seen_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
};

/** A background job's key while it runs; unfinished counts the runs that never ended (src/jobs/poison.ts). */
export type JobRunsTable = {
  queue: string;
  job_key: string;
  unfinished: number;
  updated_at: Timestamp;
};

/** One audit trail entry (contract 14); append-only, hash-chained per platform. */
export type AuditLogTable = {
  seq: GeneratedAlways<number>;
  id: string;
  at: Date;
  platform_id: string | null;
  chain: string;
  chain_seq: number;
  actor_type: string;
  actor_id: string | null;
  actor_label: string | null;
  action: string;
  target_type: string | null;
  target_id: string | null;
  outcome: string;
  ip: string | null;
  user_agent: string | null;
  request_id: string | null;
  prev_hash: string;
  hash: string;
};

/** Each audit chain's head, locked by whoever appends to it. */
export type AuditChainsTable = {
  chain: string;
  last_seq: number;
  last_hash: string;
  anchor_hash: string;
  anchor_seq: number;
};

export type MailOutboxTable = {
  id: string;
  platform_id: string | null;
  user_id: string | null;
  to_address: string;
  kind: 'notification' | 'digest' | 'password_reset' | 'invitation' | 'monthly_report';
  subject: string;
  text_body: string;
  html_body: string;
  sealed: Generated<boolean>;
  status: Generated<'pending' | 'sent' | 'failed'>;
  attempts: Generated<number>;
  last_error: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Timestamp;
  sent_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  /** A file attached to the message (migration 0024). */
  attachment_name: ColumnType<string | null, string | null | undefined, string | null>;
  attachment_type: ColumnType<string | null, string | null | undefined, string | null>;
  attachment: ColumnType<Buffer | Uint8Array | null, Buffer | Uint8Array | null | undefined, Buffer | Uint8Array | null>;
};

export type MonthlyReportMailsTable = {
  user_id: string;
  /** The first day of the month the report is of. */
  month: ColumnType<Date | string, string, string>;
  mail_id: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Timestamp;
};

export type MailPreferencesTable = {
  user_id: string;
  event_type: string;
  delivery: 'immediate' | 'daily' | 'off';
};

export type MailDigestItemsTable = {
  id: string;
  user_id: string;
  event_id: string;
  event_type: string;
  summary: string;
  created_at: Date;
  message_id: ColumnType<string | null, string | null | undefined, string | null>;
};

export type PasswordResetTokensTable = {
  /** SHA-256 of the link's token: the token itself is never stored. */
  token_hash: Uint8Array;
  user_id: string;
  expires_at: Date;
  used_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  created_at: Timestamp;
};

export type ConsoleInvitationsTable = {
  id: string;
  /** SHA-256 of the link's token. */
  token_hash: Uint8Array;
  platform_id: string;
  email: string;
  role: 'owner' | 'operator' | 'viewer';
  invited_by: string | null;
  expires_at: Date;
  accepted_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  user_id: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Timestamp;
};

export type Schema = {
  platforms: PlatformsTable;
  api_keys: ApiKeysTable;
  platform_customers: PlatformCustomersTable;
  irms: IrmsTable;
  ebrcs: EbrcsTable;
  reconciliations: ReconciliationsTable;
  irm_day_counts: IrmDayCountsTable;
  irm_month_counts: IrmMonthCountsTable;
  irm_customer_counts: IrmCustomerCountsTable;
  genebrc_requests: GenebrcRequestsTable;
  genebrc_request_lines: GenebrcRequestLinesTable;
  genebrc_request_records: GenebrcRequestRecordsTable;
  genebrc_request_status_counts: GenebrcRequestStatusCountsTable;
  genebrc_request_day_counts: GenebrcRequestDayCountsTable;
  genebrc_request_month_counts: GenebrcRequestMonthCountsTable;
  idempotency_keys: IdempotencyKeysTable;
  installation_settings: InstallationSettingsTable;
  events: EventsTable;
  event_queue: EventQueueTable;
  event_day_counts: EventDayCountsTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_attempts: WebhookAttemptsTable;
  bulk_uploads: BulkUploadsTable;
  bulk_upload_pushes: BulkUploadPushesTable;
  console_users: ConsoleUsersTable;
  console_sessions: ConsoleSessionsTable;
  console_recovery_codes: ConsoleRecoveryCodesTable;
  job_runs: JobRunsTable;
  audit_log: AuditLogTable;
  audit_chains: AuditChainsTable;
  mail_outbox: MailOutboxTable;
  monthly_report_mails: MonthlyReportMailsTable;
  mail_preferences: MailPreferencesTable;
  mail_digest_items: MailDigestItemsTable;
  password_reset_tokens: PasswordResetTokensTable;
  console_invitations: ConsoleInvitationsTable;
};

-- The sandbox authority's whole state. It lives in the schema authority_sandbox, which the migration runner creates
-- (with its schema_migrations table) before this runs; no table outside it is read or written.

-- The authority's own RSA key pair, one for the whole sandbox: its public half is every credential set's
-- dgftpublicKey. PKCS#8 DER, base64; the public half is derived from it.
create table authority_sandbox.authority_key (
  singleton boolean primary key default true check (singleton),
  private_key text not null,
  created_at timestamptz not null default now()
);

-- One API credential set per test account, generated at the first start. The user's private key is handed out in
-- the set (userprivateKey); the sandbox checks request signatures with its public half.
create table authority_sandbox.credential_sets (
  account_username text primary key,
  iec_code text not null unique,
  client_id text not null unique,
  client_secret text not null,
  api_key text not null unique,
  user_private_key text not null,
  -- null: the set speaks SANDBOX_ENVELOPE_PROFILE; set when /sandbox/issueApiCredentials is asked for a profile.
  envelope_profile text check (envelope_profile in ('spec-sha256', 'java-pbkdf2')),
  created_at timestamptz not null default now()
);

-- Access tokens by the SHA-256 of the token: a copy of the database holds no usable token.
create table authority_sandbox.access_tokens (
  token_hash text primary key,
  client_id text not null references authority_sandbox.credential_sets (client_id),
  expires_at timestamptz not null
);
create index access_tokens_expiry on authority_sandbox.access_tokens (expires_at);

-- IRMs materialised from the deterministic generator; seq is the IRM's position in its account's stream.
create table authority_sandbox.irms (
  irm_number text primary key,
  account_username text not null,
  seq integer not null,
  irm_issue_date date not null,
  ifsc_code text not null,
  remittance_ad_code text not null,
  remittance_date date not null,
  remittance_fcc text not null,
  remittance_fcc_amount numeric(16, 2) not null,
  orm_amount_fcc numeric(16, 2) not null default 0,
  available_amount numeric(16, 2) not null,
  utilised_amount numeric(16, 2) not null default 0,
  iec_code text not null,
  pan_number text not null,
  remitter_name text not null,
  remitter_country text not null,
  purpose_of_remittance text not null,
  constraint irms_balance_never_negative check (available_amount >= 0 and utilised_amount >= 0),
  constraint irms_balance_adds_up check (available_amount + utilised_amount = remittance_fcc_amount),
  constraint irms_account_seq unique (account_username, seq)
);
create index irms_account_issued on authority_sandbox.irms (account_username, irm_issue_date);

-- Every push that could be keyed by its requestId, refused ones included: a requestId is never reused (ERR09).
create table authority_sandbox.requests (
  request_id text primary key,
  account_username text not null,
  ack_id text unique,
  ack_status text not null check (ack_status in ('Validated', 'Failed')),
  record_res_count integer not null,
  error_details jsonb not null default '[]',
  received_at timestamptz not null,
  processed_at timestamptz,
  constraint requests_ack check ((ack_status = 'Validated') = (ack_id is not null))
);
create index requests_awaiting_processing on authority_sandbox.requests (received_at) where processed_at is null;

create table authority_sandbox.request_lines (
  request_id text not null references authority_sandbox.requests (request_id),
  serial_no integer not null,
  irm_number text not null references authority_sandbox.irms (irm_number),
  bill_no text not null,
  sb_cum_invoice_number text not null,
  sb_cum_invoice_date date not null,
  -- The IRM's currency, in which the mapped (realised) amount is.
  currency text not null,
  mapped_amount numeric(16, 2) not null check (mapped_amount > 0),
  status text not null default 'PENDING' check (status in ('PENDING', 'GENERATED', 'FAILED')),
  ebrc_number text unique,
  ebrc_date date,
  error_details jsonb not null default '[]',
  primary key (request_id, serial_no),
  constraint request_lines_ebrc check ((status = 'GENERATED') = (ebrc_number is not null and ebrc_date is not null))
);
create index request_lines_generated on authority_sandbox.request_lines (ebrc_date) where status = 'GENERATED';

create sequence authority_sandbox.ebrc_numbers;

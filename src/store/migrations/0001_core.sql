-- Platforms, their API keys and their customers.
create table platforms (
  id uuid primary key,
  name text not null,
  created_at timestamptz not null default now()
);

create table api_keys (
  id uuid primary key,
  platform_id uuid not null references platforms (id),
  key_hash text not null unique,
  display_prefix text not null,
  created_at timestamptz not null default now(),
  revoked_at timestamptz
);
create index api_keys_platform on api_keys (platform_id, created_at);

create table platform_customers (
  id uuid primary key,
  platform_id uuid not null references platforms (id),
  name text not null,
  email text not null,
  type text not null default 'customer',
  company_name text not null,
  address text,
  is_active boolean not null default true,
  iec_code text,
  authority_verified_at timestamptz,
  authority_username text,
  authority_credentials text,
  irms_pulled_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index platform_customers_email on platform_customers (platform_id, lower(email));
create index platform_customers_newest on platform_customers (platform_id, created_at desc, id desc);

-- IRMs as last pulled from the authority; balances follow this service's pushes.
create table irms (
  id uuid primary key,
  platform_id uuid not null references platforms (id),
  platform_customer_id uuid not null references platform_customers (id),
  irm_number text not null,
  irm_issue_date date not null,
  ifsc_code text not null,
  remittance_ad_code text not null,
  remittance_date date not null,
  remittance_fcc text not null,
  remittance_fcc_amount numeric(16, 2) not null,
  orm_amount_fcc numeric(16, 2) not null default 0,
  irm_available_amt numeric(16, 2) not null,
  irm_utilized_amt numeric(16, 2) not null default 0,
  iec_code text not null,
  pan_number text not null,
  remitter_name text not null,
  remitter_country text not null,
  purpose_of_remittance text not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint irms_balance_never_negative check (irm_available_amt >= 0 and irm_utilized_amt >= 0),
  constraint irms_balance_adds_up check (irm_available_amt + irm_utilized_amt = remittance_fcc_amount)
);
create unique index irms_customer_number on irms (platform_customer_id, irm_number);
create index irms_customer_newest on irms (platform_customer_id, irm_issue_date desc, irm_number);

-- eBRC generation requests and their lines.
create table genebrc_requests (
  id uuid primary key,
  platform_id uuid not null references platforms (id),
  platform_customer_id uuid not null references platform_customers (id),
  request_id text not null unique,
  iec_number text not null,
  record_res_count integer not null,
  upload_type text not null,
  declaration_flag text not null,
  status text not null,
  authority_ack_id text,
  error_details jsonb not null default '[]',
  processed_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index genebrc_requests_customer_newest on genebrc_requests (platform_customer_id, created_at desc, id desc);
create index genebrc_requests_open on genebrc_requests (status, created_at) where status in ('SUBMITTING', 'PENDING');

create table genebrc_request_lines (
  request_id uuid not null references genebrc_requests (id),
  line_index integer not null,
  serial_no integer not null,
  irm_id uuid references irms (id),
  irm_number text not null,
  sb_cum_invoice_number text not null,
  mapped_amount numeric(16, 2) not null,
  reserved boolean not null default false,
  payload jsonb not null,
  status text not null default 'PENDING',
  ebrc_number text unique,
  ebrc_date date,
  error_details jsonb not null default '[]',
  primary key (request_id, line_index)
);
create index genebrc_request_lines_irm on genebrc_request_lines (irm_id) where reserved;

-- Idempotency-Key records: the first answer to a POST, replayed for retries.
create table idempotency_keys (
  platform_id uuid not null references platforms (id),
  key text not null,
  fingerprint text not null,
  state text not null,
  status_code integer,
  response_body text,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  primary key (platform_id, key)
);
create index idempotency_keys_expiry on idempotency_keys (expires_at);

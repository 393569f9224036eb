-- The sandbox authority's own state: its IRMs with their balances, and the pushes it received.
-- Kept apart in its own schema: a production deployment talks to the real authority and never reads these.
create schema sandbox;

-- IRMs materialised from the deterministic generator; seq is the IRM's position in its account's stream.
create table sandbox.irms (
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
  constraint sandbox_irms_balance_never_negative check (available_amount >= 0 and utilised_amount >= 0),
  constraint sandbox_irms_balance_adds_up check (available_amount + utilised_amount = remittance_fcc_amount),
  constraint sandbox_irms_account_seq unique (account_username, seq)
);
create index sandbox_irms_account_issued on sandbox.irms (account_username, irm_issue_date);

-- Every push the sandbox could key by its requestId, refused ones included: a requestId is never reused (ERR09).
create table sandbox.requests (
  request_id text primary key,
  account_username text not null,
  ack_id text unique,
  ack_status text not null check (ack_status in ('Validated', 'Failed')),
  record_res_count integer not null,
  error_details jsonb not null default '[]',
  received_at timestamptz not null,
  processed_at timestamptz,
  constraint sandbox_requests_ack check ((ack_status = 'Validated') = (ack_id is not null))
);

create table sandbox.request_lines (
  request_id text not null references sandbox.requests (request_id),
  serial_no integer not null,
  irm_number text not null references sandbox.irms (irm_number),
  bill_no text not null,
  mapped_amount numeric(16, 2) not null check (mapped_amount > 0),
  status text not null default 'PENDING' check (status in ('PENDING', 'GENERATED', 'FAILED')),
  ebrc_number text unique,
  ebrc_date date,
  error_details jsonb not null default '[]',
  primary key (request_id, serial_no),
  constraint sandbox_request_lines_ebrc check ((status = 'GENERATED') = (ebrc_number is not null and ebrc_date is not null))
);

create sequence sandbox.ebrc_numbers;

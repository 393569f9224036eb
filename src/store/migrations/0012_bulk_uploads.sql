-- Spreadsheet uploads (contract 11). The file is kept until its rows are checked (so that a killed service checks
-- it again), then replaced by its plan: the pushes it splits into, each with its lines and spreadsheet rows. A
-- push's request_id is written in the transaction that stores the request, so a resumed upload never pushes a
-- planned push twice: one with a request is done (its acknowledgement is read back), one without was never stored.
create table bulk_uploads (
  id uuid primary key,
  platform_id uuid not null references platforms (id),
  platform_customer_id uuid not null references platform_customers (id),
  status text not null constraint bulk_uploads_status check (status in ('validating', 'rejected', 'pushing', 'completed')),
  file_name text not null,
  file_sha256 text not null,
  file_content bytea,
  upload_type text not null,
  declaration_flag text not null,
  row_count integer,
  rows_done integer not null default 0,
  errors json not null default '[]',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index bulk_uploads_platform on bulk_uploads (platform_id, created_at desc, id desc);
create index bulk_uploads_customer on bulk_uploads (platform_customer_id, created_at desc, id desc);
create index bulk_uploads_file on bulk_uploads (platform_customer_id, file_sha256, created_at desc);
create index bulk_uploads_unfinished on bulk_uploads (created_at) where status in ('validating', 'pushing');

create table bulk_upload_pushes (
  upload_id uuid not null references bulk_uploads (id) on delete cascade,
  push_index integer not null,
  spreadsheet_rows json not null,
  lines json not null,
  request_id uuid references genebrc_requests (id),
  ack_status text constraint bulk_upload_pushes_ack check (ack_status in ('Validated', 'Failed')),
  errors json not null default '[]',
  primary key (upload_id, push_index)
);
create index bulk_upload_pushes_request on bulk_upload_pushes (request_id) where request_id is not null;

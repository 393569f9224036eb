-- Reconciliation runs (contract 13): a customer's IRMs and eBRCs brought up to date with the authority, on a schedule
-- or on request. At most one runs per customer at a time (the partial unique index); a run left running by a process
-- that died is failed by the next start for that customer once it is older than the service's limit.
create table reconciliations (
  id uuid primary key,
  platform_id uuid not null references platforms (id),
  platform_customer_id uuid not null references platform_customers (id),
  trigger text not null check (trigger in ('schedule', 'request')),
  status text not null check (status in ('running', 'completed', 'failed')),
  started_at timestamptz not null,
  finished_at timestamptz,
  irms_updated integer not null default 0,
  irms_cancelled integer not null default 0,
  ebrcs_discovered integer not null default 0,
  ebrcs_cancelled integer not null default 0,
  error text
);
create unique index reconciliations_one_running on reconciliations (platform_customer_id) where status = 'running';
create index reconciliations_customer_newest on reconciliations (platform_customer_id, started_at desc, id desc);

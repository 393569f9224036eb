-- List totals without counting rows (docs/performance.md, section 2).

-- IRMs: a customer's total in one row, kept by the trigger that keeps irm_day_counts (date filters still sum days).
create table irm_customer_counts (
  platform_customer_id uuid primary key references platform_customers (id),
  irms integer not null
);

create or replace function irm_day_counts_add() returns trigger language plpgsql as $$
begin
  insert into irm_day_counts (platform_customer_id, irm_issue_date, irms)
  select platform_customer_id, irm_issue_date, count(*) from inserted_irms group by platform_customer_id, irm_issue_date
  order by platform_customer_id, irm_issue_date
  on conflict (platform_customer_id, irm_issue_date) do update set irms = irm_day_counts.irms + excluded.irms;
  insert into irm_customer_counts (platform_customer_id, irms)
  select platform_customer_id, count(*) from inserted_irms group by platform_customer_id
  order by platform_customer_id
  on conflict (platform_customer_id) do update set irms = irm_customer_counts.irms + excluded.irms;
  return null;
end;
$$;

insert into irm_customer_counts (platform_customer_id, irms)
select platform_customer_id, count(*) from irms group by platform_customer_id;

-- GenEBRC requests: per customer and status (unfiltered and status-filtered totals: a few rows), and per customer,
-- UTC day of created_at and status (date filters, which are whole UTC days). Requests are never deleted and their
-- customer and creation time never change; their status does.
--
-- Kept by row triggers deferred to commit rather than statement triggers: a push inserts its request first and then
-- its lines (up to 999) and its poller job in the same transaction, and the count rows it touches are shared by
-- every push of that customer that day. Taken at the insert, their row locks would be held for the rest of the
-- transaction and serialize the customer's concurrent pushes; taken at commit, they are held for the commit only.
-- (A statement trigger with transition tables cannot be deferred.) Every change locks its rows in key order.
create table genebrc_request_status_counts (
  platform_customer_id uuid not null references platform_customers (id),
  status text not null,
  requests integer not null,
  primary key (platform_customer_id, status)
);

create table genebrc_request_day_counts (
  platform_customer_id uuid not null references platform_customers (id),
  created_day date not null,
  status text not null,
  requests integer not null,
  primary key (platform_customer_id, created_day, status)
);

create function genebrc_request_counts_change() returns trigger language plpgsql as $$
begin
  with change (platform_customer_id, created_day, status, delta) as (
    select new.platform_customer_id, (new.created_at at time zone 'UTC')::date, new.status, 1
    where tg_op in ('INSERT', 'UPDATE')
    union all
    select old.platform_customer_id, (old.created_at at time zone 'UTC')::date, old.status, -1
    where tg_op = 'UPDATE'
  )
  insert into genebrc_request_day_counts (platform_customer_id, created_day, status, requests)
  select platform_customer_id, created_day, status, sum(delta) from change
  group by platform_customer_id, created_day, status having sum(delta) <> 0
  order by platform_customer_id, created_day, status
  on conflict (platform_customer_id, created_day, status)
    do update set requests = genebrc_request_day_counts.requests + excluded.requests;

  with change (platform_customer_id, status, delta) as (
    select new.platform_customer_id, new.status, 1
    where tg_op in ('INSERT', 'UPDATE')
    union all
    select old.platform_customer_id, old.status, -1
    where tg_op = 'UPDATE'
  )
  insert into genebrc_request_status_counts (platform_customer_id, status, requests)
  select platform_customer_id, status, sum(delta) from change
  group by platform_customer_id, status having sum(delta) <> 0
  order by platform_customer_id, status
  on conflict (platform_customer_id, status)
    do update set requests = genebrc_request_status_counts.requests + excluded.requests;
  return null;
end;
$$;

create constraint trigger genebrc_requests_counted after insert on genebrc_requests
  deferrable initially deferred
  for each row execute function genebrc_request_counts_change();

create constraint trigger genebrc_requests_recounted after update on genebrc_requests
  deferrable initially deferred
  for each row
  when (old.status is distinct from new.status
    or old.platform_customer_id is distinct from new.platform_customer_id
    or old.created_at is distinct from new.created_at)
  execute function genebrc_request_counts_change();

insert into genebrc_request_status_counts (platform_customer_id, status, requests)
select platform_customer_id, status, count(*) from genebrc_requests group by platform_customer_id, status;

insert into genebrc_request_day_counts (platform_customer_id, created_day, status, requests)
select platform_customer_id, (created_at at time zone 'UTC')::date, status, count(*)
from genebrc_requests group by platform_customer_id, (created_at at time zone 'UTC')::date, status;

-- Pages take their ids from the index alone (it carries the status for the status filter), in either direction,
-- then read only their rows.
drop index genebrc_requests_customer_newest;
create index genebrc_requests_customer_newest on genebrc_requests (platform_customer_id, created_at desc, id desc)
  include (status);

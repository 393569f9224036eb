-- A later page of a list kept per day starts at the day it begins on, found by summing the customer's days newest
-- first up to the page's offset (src/store/paging.ts, readPage). Over days alone that sum read, sorted and added up
-- every day the customer has: 1,095 rows for three years of IRMs, most of a later page's cost in the database. The same
-- counts per month find the month first (37 rows for three years), then the day within it (at most 31).
-- Kept in the same triggers, in the same transactions, as the day counts; a month is its first day.

-- Until this transaction commits, other processes' writes run the triggers as they were, which do not count months:
-- the backfill below must see every row, so writers wait for it (a deploy's migration runs beside old processes).
lock table irms, genebrc_requests in share mode;

create table irm_month_counts (
  platform_customer_id uuid not null references platform_customers (id),
  irm_month date not null,
  irms integer not null,
  primary key (platform_customer_id, irm_month)
);

create or replace function irm_day_counts_add() returns trigger language plpgsql as $$
begin
  insert into irm_day_counts (platform_customer_id, irm_issue_date, irms)
  select platform_customer_id, irm_issue_date, count(*) from inserted_irms group by platform_customer_id, irm_issue_date
  order by platform_customer_id, irm_issue_date
  on conflict (platform_customer_id, irm_issue_date) do update set irms = irm_day_counts.irms + excluded.irms;
  insert into irm_month_counts (platform_customer_id, irm_month, irms)
  select platform_customer_id, date_trunc('month', irm_issue_date::timestamp)::date, count(*) from inserted_irms
  group by platform_customer_id, date_trunc('month', irm_issue_date::timestamp)::date
  order by platform_customer_id, date_trunc('month', irm_issue_date::timestamp)::date
  on conflict (platform_customer_id, irm_month) do update set irms = irm_month_counts.irms + excluded.irms;
  insert into irm_customer_counts (platform_customer_id, irms)
  select platform_customer_id, count(*) from inserted_irms group by platform_customer_id
  order by platform_customer_id
  on conflict (platform_customer_id) do update set irms = irm_customer_counts.irms + excluded.irms;
  return null;
end;
$$;

insert into irm_month_counts (platform_customer_id, irm_month, irms)
select platform_customer_id, date_trunc('month', irm_issue_date::timestamp)::date, sum(irms)
from irm_day_counts group by platform_customer_id, date_trunc('month', irm_issue_date::timestamp)::date;

create table genebrc_request_month_counts (
  platform_customer_id uuid not null references platform_customers (id),
  created_month date not null,
  status text not null,
  requests integer not null,
  primary key (platform_customer_id, created_month, status)
);

create or replace function genebrc_request_counts_change() returns trigger language plpgsql as $$
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

  with change (platform_customer_id, created_month, status, delta) as (
    select new.platform_customer_id, date_trunc('month', new.created_at at time zone 'UTC')::date, new.status, 1
    where tg_op in ('INSERT', 'UPDATE')
    union all
    select old.platform_customer_id, date_trunc('month', old.created_at at time zone 'UTC')::date, old.status, -1
    where tg_op = 'UPDATE'
  )
  insert into genebrc_request_month_counts (platform_customer_id, created_month, status, requests)
  select platform_customer_id, created_month, status, sum(delta) from change
  group by platform_customer_id, created_month, status having sum(delta) <> 0
  order by platform_customer_id, created_month, status
  on conflict (platform_customer_id, created_month, status)
    do update set requests = genebrc_request_month_counts.requests + excluded.requests;

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

insert into genebrc_request_month_counts (platform_customer_id, created_month, status, requests)
select platform_customer_id, date_trunc('month', created_day::timestamp)::date, status, sum(requests)
from genebrc_request_day_counts group by platform_customer_id, date_trunc('month', created_day::timestamp)::date, status;

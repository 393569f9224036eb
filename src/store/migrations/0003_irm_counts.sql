-- IRM totals without counting rows: a customer's IRMs per issue date, kept by a statement trigger, so that a
-- page's total is a sum over at most a few hundred days even for a customer with 100,000 IRMs.
-- IRMs are never deleted and their customer and issue date never change (the upsert leaves them as first seen).
create table irm_day_counts (
  platform_customer_id uuid not null references platform_customers (id),
  irm_issue_date date not null,
  irms integer not null,
  primary key (platform_customer_id, irm_issue_date)
);

create function irm_day_counts_add() returns trigger language plpgsql as $$
begin
  insert into irm_day_counts (platform_customer_id, irm_issue_date, irms)
  select platform_customer_id, irm_issue_date, count(*) from inserted_irms group by platform_customer_id, irm_issue_date
  on conflict (platform_customer_id, irm_issue_date) do update set irms = irm_day_counts.irms + excluded.irms;
  return null;
end;
$$;

create trigger irms_counted after insert on irms
  referencing new table as inserted_irms
  for each statement execute function irm_day_counts_add();

insert into irm_day_counts (platform_customer_id, irm_issue_date, irms)
select platform_customer_id, irm_issue_date, count(*) from irms group by platform_customer_id, irm_issue_date;

-- Pages are found on the index alone (it carries the id), then only their rows are read.
drop index irms_customer_newest;
create index irms_customer_newest on irms (platform_customer_id, irm_issue_date desc, irm_number) include (id);

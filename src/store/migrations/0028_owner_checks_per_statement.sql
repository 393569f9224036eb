-- The owners of events and of the register's eBRCs checked once per statement instead of once per row
-- (docs/performance.md, "The owners' checks"). A foreign key checks each inserted row on its own and locks the
-- referenced row (FOR KEY SHARE): a finished 999-line request inserts 999 eBRC events and 999 register rows, and
-- concurrent requests of one platform share its row's lock, which PostgreSQL keeps as a multixact. That was about a
-- third of those inserts' CPU.
--
-- What the keys guarded stays guarded: every inserted row's platform must exist, and its customer, when it has one,
-- must exist and be that platform's (stricter than the keys were). No operation deletes a platform or a customer, so
-- no row can lose its owner afterwards.

alter table events drop constraint events_platform_id_fkey;
alter table events drop constraint events_platform_customer_id_fkey;
alter table ebrcs drop constraint ebrcs_platform_id_fkey;
alter table ebrcs drop constraint ebrcs_platform_customer_id_fkey;

create function owners_exist() returns trigger language plpgsql as $$
begin
  if exists (
    select 1
    from (select distinct platform_id, platform_customer_id from added_rows) owner
    where not exists (select 1 from platforms where platforms.id = owner.platform_id)
      or (owner.platform_customer_id is not null and not exists (
        select 1 from platform_customers customer
        where customer.id = owner.platform_customer_id and customer.platform_id = owner.platform_id))
  ) then
    raise exception 'insert into %: a row''s platform or customer does not exist, or the customer is not the platform''s',
      tg_table_name using errcode = 'foreign_key_violation';
  end if;
  return null;
end;
$$;

create trigger events_owners_exist after insert on events
  referencing new table as added_rows for each statement execute function owners_exist();
create trigger ebrcs_owners_exist after insert on ebrcs
  referencing new table as added_rows for each statement execute function owners_exist();

-- The relay's queue of events not yet dispatched, beside the events instead of a mark on them (docs/performance.md,
-- "The event queue"). Marking an event dispatched changed `dispatched_at`, a column of the partial index
-- `events_undispatched`: every mark was an update that wrote a new version of the event's row and a new entry in each
-- of the table's six indexes, 999 of them for a 999-line request's eBRC events. An event is now written once; its queue
-- row carries what routing needs (never the data) and is deleted by the relay's transaction that dispatches it.
create table event_queue (
  seq bigint primary key,
  event_id text not null,
  platform_id uuid not null,
  type text not null,
  endpoint_id uuid,
  created_at timestamptz not null
);

insert into event_queue (seq, event_id, platform_id, type, endpoint_id, created_at)
select seq, id, platform_id, type, endpoint_id, created_at from events where dispatched_at is null;

drop index events_undispatched;
alter table events drop column dispatched_at;

-- The relay's queue of events not yet dispatched, beside the events instead of a mark on them (docs/performance.md,
-- "The event queue"). Marking an event dispatched changed `dispatched_at`, a column of the partial index
-- `events_undispatched`: every mark was an update that wrote a new version of the event's row and a new entry in each
-- of the table's six indexes, 999 of them for a 999-line request's eBRC events. An event is now written once; its queue
-- row carries what routing needs (never the data) and is deleted by the relay's transaction that dispatches it.

-- Writes wait for this migration: the backfill below must see every event, and a relay of the version before it must
-- not mark an event while it is copied.
lock table events in share row exclusive mode;

create table event_queue (
  seq bigint primary key,
  event_id text not null,
  platform_id uuid not null,
  type text not null,
  endpoint_id uuid,
  created_at timestamptz not null
);

-- Every event written is queued, by whichever version of the code wrote it: processes of the version before this one
-- go on writing events until a deploy has replaced them. (Their relays fail from here on, `dispatched_at` being gone,
-- and dispatch nothing twice; this version's relays take the queue.)
create function events_enqueue() returns trigger language plpgsql as $$
begin
  insert into event_queue (seq, event_id, platform_id, type, endpoint_id, created_at)
  select seq, id, platform_id, type, endpoint_id, created_at from queued_events;
  return null;
end;
$$;

create trigger events_queued after insert on events
  referencing new table as queued_events for each statement execute function events_enqueue();

-- An event purged before any relay took it leaves the queue with it, whichever version purged it: a relay never routes
-- an event that is gone (its attempts would reference no event).
create function events_unqueue() returns trigger language plpgsql as $$
begin
  delete from event_queue where event_id in (select id from unqueued_events);
  return null;
end;
$$;

create trigger events_unqueued after delete on events
  referencing old table as unqueued_events for each statement execute function events_unqueue();

insert into event_queue (seq, event_id, platform_id, type, endpoint_id, created_at)
select seq, id, platform_id, type, endpoint_id, created_at from events where dispatched_at is null;

drop index events_undispatched;
alter table events drop column dispatched_at;

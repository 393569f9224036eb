-- Events (the outbox, contract 9) and webhook endpoints with their delivery attempts.

-- An event is written in the transaction of the change it reports, and only there (src/services/outbox.ts). The relay
-- (src/jobs/event-relay.ts) turns each undispatched event into one delivery attempt per endpoint that wants it, and
-- marks it dispatched, in one transaction.
create table events (
  seq bigint generated always as identity,
  id text primary key,
  platform_id uuid not null references platforms (id),
  platform_customer_id uuid references platform_customers (id),
  type text not null,
  -- json, not jsonb: the data keeps the key order it was written with, which every delivery repeats.
  data json not null,
  -- Set for webhook.test only: that event goes to this endpoint alone.
  endpoint_id uuid,
  created_at timestamptz not null default now(),
  dispatched_at timestamptz
);

create index events_platform_newest on events (platform_id, created_at desc, id desc);
create index events_platform_type_newest on events (platform_id, type, created_at desc, id desc);
create index events_customer_newest on events (platform_customer_id, created_at desc, id desc) where platform_customer_id is not null;
create index events_undispatched on events (seq) where dispatched_at is null;
create index events_created on events (created_at);

-- List totals without counting rows: per platform, customer ('' for none), type and UTC day. Kept by statement
-- triggers, one grouped upsert per statement: a 999-line request's eBRC events are one insert. Every writer inserts
-- its events last in its transaction, so the count rows' locks are held only until its commit.
create table event_day_counts (
  platform_id uuid not null references platforms (id),
  platform_customer_key text not null,
  type text not null,
  created_day date not null,
  events integer not null,
  primary key (platform_id, created_day, type, platform_customer_key)
);

create function event_counts_add() returns trigger language plpgsql as $$
begin
  insert into event_day_counts (platform_id, platform_customer_key, type, created_day, events)
  select platform_id, coalesce(platform_customer_id::text, ''), type, (created_at at time zone 'UTC')::date, count(*)
  from added_events group by 1, 2, 3, 4 order by 1, 4, 3, 2
  on conflict (platform_id, created_day, type, platform_customer_key)
    do update set events = event_day_counts.events + excluded.events;
  return null;
end;
$$;

create function event_counts_remove() returns trigger language plpgsql as $$
begin
  update event_day_counts counts set events = counts.events - removed.events
  from (
    select platform_id, coalesce(platform_customer_id::text, '') as platform_customer_key, type,
      (created_at at time zone 'UTC')::date as created_day, count(*) as events
    from removed_events group by 1, 2, 3, 4
  ) removed
  where counts.platform_id = removed.platform_id and counts.platform_customer_key = removed.platform_customer_key
    and counts.type = removed.type and counts.created_day = removed.created_day;
  delete from event_day_counts where events = 0;
  return null;
end;
$$;

create trigger events_counted after insert on events
  referencing new table as added_events for each statement execute function event_counts_add();

-- Events are deleted only by the retention purge.
create trigger events_uncounted after delete on events
  referencing old table as removed_events for each statement execute function event_counts_remove();

create table webhook_endpoints (
  id uuid primary key,
  platform_id uuid not null references platforms (id),
  url text not null,
  description text,
  enabled_events jsonb not null,
  status text not null check (status in ('enabled', 'disabled')),
  -- Why it was disabled: by its platform, or after failing for the configured time.
  disabled_reason text,
  -- The signing secrets, sealed (AES-256-GCM with the server key); the previous one signs beside the current one
  -- until it expires (a rotation's overlap).
  secret text not null,
  previous_secret text,
  previous_secret_expires_at timestamptz,
  -- Since when every attempt has failed (null after a success): five days of it disable the endpoint.
  failing_since timestamptz,
  attempt_count bigint not null default 0,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create index webhook_endpoints_platform_newest on webhook_endpoints (platform_id, created_at desc, id desc);

-- One row per delivery attempt; the next attempt of a failed one is a row of its own.
create table webhook_attempts (
  id uuid primary key,
  endpoint_id uuid not null references webhook_endpoints (id) on delete cascade,
  event_id text not null references events (id) on delete cascade,
  attempt integer not null,
  -- Which wait of the retry schedule follows this attempt when it fails: 0 for a first delivery or a redelivery.
  retry integer not null,
  status text not null check (status in ('pending', 'succeeded', 'failed')),
  response_status integer,
  response_body text,
  duration_ms integer,
  error text,
  created_at timestamptz not null default now(),
  -- A pending attempt: when it is due. A failed one: when the next attempt is due (null when none follows).
  next_attempt_at timestamptz
);

create index webhook_attempts_endpoint_newest on webhook_attempts (endpoint_id, created_at desc, id desc);
create index webhook_attempts_event on webhook_attempts (event_id);
create index webhook_attempts_pending on webhook_attempts (next_attempt_at) where status = 'pending';

-- The endpoints are locked in id order first: every writer of attempts (the relay, the delivery worker, a redelivery)
-- takes them in the same order, so two of them cannot deadlock over an endpoint's count.
create function webhook_attempt_counts_add() returns trigger language plpgsql as $$
begin
  perform 1 from webhook_endpoints where id in (select endpoint_id from added_attempts) order by id for no key update;
  update webhook_endpoints endpoint set attempt_count = endpoint.attempt_count + added.attempts
  from (select endpoint_id, count(*) as attempts from added_attempts group by endpoint_id) added
  where endpoint.id = added.endpoint_id;
  return null;
end;
$$;

create function webhook_attempt_counts_remove() returns trigger language plpgsql as $$
begin
  update webhook_endpoints endpoint set attempt_count = endpoint.attempt_count - removed.attempts
  from (select endpoint_id, count(*) as attempts from removed_attempts group by endpoint_id) removed
  where endpoint.id = removed.endpoint_id;
  return null;
end;
$$;

create trigger webhook_attempts_counted after insert on webhook_attempts
  referencing new table as added_attempts for each statement execute function webhook_attempt_counts_add();

create trigger webhook_attempts_uncounted after delete on webhook_attempts
  referencing old table as removed_attempts for each statement execute function webhook_attempt_counts_remove();

-- E-mail (contract 15). The mail outbox: one row per message, written in the transaction of the change it tells of and
-- sent by a job afterwards; its id gives the message's Message-ID, so an attempt repeated after a kill carries the same
-- one. Bodies that hold a single-use link (a password reset, an invitation) are sealed with the server key.
create table mail_outbox (
  id uuid primary key,
  platform_id uuid references platforms (id),
  user_id uuid references console_users (id) on delete set null,
  to_address text not null,
  kind text not null check (kind in ('notification', 'digest', 'password_reset', 'invitation')),
  subject text not null,
  text_body text not null,
  html_body text not null,
  sealed boolean not null default false,
  status text not null default 'pending' check (status in ('pending', 'sent', 'failed')),
  attempts integer not null default 0,
  last_error text,
  created_at timestamptz not null default now(),
  sent_at timestamptz
);
create index mail_outbox_platform on mail_outbox (platform_id, created_at, id);
create index mail_outbox_pending on mail_outbox (created_at) where status = 'pending';

-- The time zone a user's messages show times in (an IANA name).
alter table console_users add column time_zone text not null default 'UTC';

-- A user's choice per notification type: immediate, daily (in the digest) or off. No row: the role's default.
create table mail_preferences (
  user_id uuid not null references console_users (id) on delete cascade,
  event_type text not null,
  delivery text not null check (delivery in ('immediate', 'daily', 'off')),
  primary key (user_id, event_type)
);

-- Notifications waiting for a user's daily digest; message_id is set when the digest that carries them is written.
create table mail_digest_items (
  id uuid primary key,
  user_id uuid not null references console_users (id) on delete cascade,
  event_id text not null,
  event_type text not null,
  summary text not null,
  created_at timestamptz not null,
  message_id uuid references mail_outbox (id) on delete set null
);
create index mail_digest_items_waiting on mail_digest_items (user_id, created_at) where message_id is null;

-- Password resets: the link's token by its SHA-256 only, single use, 30 minutes.
create table password_reset_tokens (
  token_hash bytea primary key,
  user_id uuid not null references console_users (id) on delete cascade,
  expires_at timestamptz not null,
  used_at timestamptz,
  created_at timestamptz not null default now()
);
create index password_reset_tokens_user on password_reset_tokens (user_id);

-- Invitations to a platform's console: the token's SHA-256 only, 7 days; the role as text until roles are columns.
create table console_invitations (
  id uuid primary key,
  token_hash bytea not null unique,
  platform_id uuid not null references platforms (id),
  email text not null,
  role text not null check (role in ('owner', 'operator', 'viewer')),
  invited_by uuid references console_users (id) on delete set null,
  expires_at timestamptz not null,
  accepted_at timestamptz,
  user_id uuid references console_users (id) on delete set null,
  created_at timestamptz not null default now()
);
create index console_invitations_platform on console_invitations (platform_id, created_at);

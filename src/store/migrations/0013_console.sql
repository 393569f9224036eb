-- The operator's admin API and the platforms' web console (contract 10): when an API key was last used (written at
-- most once a minute per key), the console's users (one platform each; scrypt password hashes; e-mail unique
-- ignoring case) and their sessions (the session token's SHA-256 only; a session ends at expires_at or sign-out).
alter table api_keys add column last_used_at timestamptz;

create table console_users (
  id uuid primary key,
  platform_id uuid not null references platforms (id),
  email text not null,
  password_hash text not null,
  disabled boolean not null default false,
  failed_sign_ins integer not null default 0,
  last_failed_sign_in_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index console_users_email on console_users (lower(email));
create index console_users_platform on console_users (platform_id, created_at, id);

create table console_sessions (
  token_hash bytea primary key,
  user_id uuid not null references console_users (id) on delete cascade,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null
);
create index console_sessions_user on console_sessions (user_id);
create index console_sessions_expiry on console_sessions (expires_at);

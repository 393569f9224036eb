-- Console roles and two-factor sign-in (contract 14): each console user has a role (the users there before are
-- owners); a TOTP secret sealed with the service's key (AES-256-GCM, bound to the user) once enrolled, and when; the
-- wrong codes counted like wrong passwords; ten single-use recovery codes, SHA-256 only. A session is pending until its
-- second factor is passed (or the user enrols, when the platform requires it), and remembers when it was last seen.
-- A platform may require the second factor of every user.
alter table console_users add column role text not null default 'owner';
alter table console_users alter column role set default 'operator';
alter table console_users add constraint console_users_role check (role in ('owner', 'operator', 'viewer'));
alter table console_users add column totp_secret text;
alter table console_users add column two_factor_enrolled_at timestamptz;
alter table console_users add column last_totp_step integer;
alter table console_users add column failed_codes integer not null default 0;
alter table console_users add column last_failed_code_at timestamptz;

create table console_recovery_codes (
  user_id uuid not null references console_users (id) on delete cascade,
  code_hash bytea not null,
  used_at timestamptz,
  primary key (user_id, code_hash)
);

alter table console_sessions add column second_factor_passed boolean not null default true;
alter table console_sessions alter column second_factor_passed set default false;
alter table console_sessions add column last_seen_at timestamptz;

alter table platforms add column require_two_factor boolean not null default false;

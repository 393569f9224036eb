-- The audit trail (contract 14): one append-only entry per change, sign-in and background change that matters,
-- written in the change's own transaction. Entries form one hash chain per platform (operator-wide entries, with no
-- platform, are a chain of their own): each stores the previous entry's hash and its own, SHA-256 over that hash and
-- the entry's canonical JSON (src/services/audit.ts). Nothing updates an entry; only the retention purge deletes.
create table audit_log (
  seq bigint generated always as identity primary key,
  id uuid not null unique,
  at timestamptz not null,
  platform_id uuid,
  -- The chain's key: the platform's id, or '' for the operator-wide chain.
  chain text not null,
  chain_seq bigint not null,
  actor_type text not null check (actor_type in ('api_key', 'console_user', 'admin', 'cli', 'system')),
  actor_id text,
  actor_label text,
  action text not null,
  target_type text,
  target_id text,
  outcome text not null check (outcome in ('succeeded', 'failed')),
  ip text,
  user_agent text,
  request_id text,
  prev_hash text not null,
  hash text not null,
  unique (chain, chain_seq)
);
create index audit_log_platform_at on audit_log (platform_id, at desc, seq desc);
create index audit_log_at on audit_log (at desc, seq desc);
create index audit_log_chain_at on audit_log (chain, at);

-- Each chain's head: locked (FOR UPDATE) by the transaction that appends to the chain, so that two concurrent
-- transactions never both extend the same entry. `anchor_hash` is the hash the chain's oldest kept entry follows:
-- the zero hash until the retention purge deletes the chain's oldest entries, then the last deleted one's hash.
create table audit_chains (
  chain text primary key,
  last_seq bigint not null,
  last_hash text not null,
  anchor_hash text not null,
  anchor_seq bigint not null
);

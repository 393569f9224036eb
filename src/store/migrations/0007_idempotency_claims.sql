-- Idempotency keys, hardened (docs/decisions.md, "Idempotency").
-- Fingerprints were plain SHA-256 digests of whole bodies, a credential check's password included: they go, and the
-- records with them (kept 24 h at most; a retry across this upgrade runs as a new request).
delete from idempotency_keys;
-- A running key is held by one claim; the work it guards records what it committed (its resource) in the same
-- transaction, so a retry after a crash answers from that resource instead of doing the work again.
alter table idempotency_keys
  add column claim_id uuid,
  add column resource_id uuid;

-- Facts about this installation that every process must agree on: the check of the encryption key.
create table installation_settings (
  name text primary key,
  value text not null,
  created_at timestamptz not null default now()
);

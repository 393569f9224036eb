-- A customer's API credential set for the authority (authority-wire.md, "Credentials: one set per IEC"), sealed
-- (AES-256-GCM, bound to the customer) beside what is shown of it; and whether the authority accepts the customer's
-- credentials: unverified until a check, valid after one, invalid once the authority refuses them.
alter table platform_customers
  add column authority_api_credentials text,
  add column authority_api_iec_code text,
  add column authority_api_client_id text,
  add column authority_api_envelope_profile text,
  add column authority_api_credentials_updated_at timestamptz,
  add column authority_credentials_status text not null default 'unverified'
    constraint platform_customers_credentials_status check (authority_credentials_status in ('unverified', 'valid', 'invalid'));
update platform_customers set authority_credentials_status = 'valid' where authority_verified_at is not null;

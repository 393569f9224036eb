-- The sandbox authority is a program of its own now, with its own storage (sandbox/migrations): the service's database
-- no longer holds the authority's state. What the in-process sandbox kept here is dropped; the sandbox program
-- starts from its own deterministic accounts.
drop schema if exists sandbox cascade;

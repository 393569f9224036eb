-- The largest values a push writes are compressed with lz4 where the server has it (docs/performance.md, "The large
-- texts' compression"): a final request's stored record (about 1 MB of JSON for 999 lines) and the events whose data is
-- a request's status view (150-190 KB). PostgreSQL compressed each with pglz, about 5.5 ms of the server's CPU per
-- megabyte, against about 1 ms with lz4, which keeps them 20% larger (a 999-line record: 81 KB instead of 67 KB).
--
-- Only new values are compressed so; stored ones stay as they are and read as before. A server built without lz4
-- (PGlite, the embedded database) answers feature_not_supported, and keeps pglz.

do $$
begin
  alter table genebrc_request_records alter column record set compression lz4;
  alter table events alter column data set compression lz4;
exception when feature_not_supported then
  null;
end;
$$;

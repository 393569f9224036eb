-- A pushed line's request checked once per statement instead of once per line (docs/performance.md, "The sandbox's
-- push and the lines' request check"). The foreign key checked each of a 999-line push's lines on its own, a query and
-- a share lock on the request's row, which the same transaction had just inserted: about a fifth of the CPU of a
-- request's and its lines' insert.
--
-- What the key guarded stays guarded: every inserted line's request must exist. No operation deletes a request or
-- moves a line to another, so no line can lose its request afterwards.

alter table genebrc_request_lines drop constraint genebrc_request_lines_request_id_fkey;

create function line_requests_exist() returns trigger language plpgsql as $$
begin
  if exists (
    select 1
    from (select distinct request_id from added_lines) line
    where not exists (select 1 from genebrc_requests request where request.id = line.request_id)
  ) then
    raise exception 'insert into genebrc_request_lines: a line''s request does not exist'
      using errcode = 'foreign_key_violation';
  end if;
  return null;
end;
$$;

create trigger genebrc_request_lines_requests_exist after insert on genebrc_request_lines
  referencing new table as added_lines for each statement execute function line_requests_exist();

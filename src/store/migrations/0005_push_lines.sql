-- What each pushed line costs (docs/performance.md, "A 999-line push").
-- A line's IRM is locked and reserved by the very transaction that stores the line, and IRMs are never deleted:
-- a foreign-key check per line proves nothing more, and was a third of the time of a 999-line push's line insert.
alter table genebrc_request_lines drop constraint genebrc_request_lines_irm_id_fkey;
alter table sandbox.request_lines drop constraint request_lines_irm_number_fkey;
-- No query reads lines by IRM: the index only cost every stored line and every settled line an index entry.
drop index genebrc_request_lines_irm;
-- Room on every page for the new version of a row that a reservation updates: the update then stays on its page
-- (a HOT update) and adds nothing to the table's indexes. Pages written from now on keep the room; a database that
-- already holds many IRMs gets it for all of them with VACUUM FULL.
alter table irms set (fillfactor = 80);
alter table sandbox.irms set (fillfactor = 80);

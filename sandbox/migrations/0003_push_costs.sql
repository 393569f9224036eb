-- What a push costs the sandbox's database (docs/performance.md, "The sandbox's push and the lines' request check").
-- The service's own tables had these changes in its migration 0005; the sandbox's program, on a schema of its own
-- since, did not.
-- Room on every page for the new version of an IRM that a push or a failed line updates: the update then stays on its
-- page (a HOT update) and adds nothing to the table's three indexes. Pages written from now on keep the room; a
-- database that already holds many IRMs gets it for all of them with VACUUM FULL.
alter table authority_sandbox.irms set (fillfactor = 80);
-- A line's IRM is locked (for update) by the very transaction that stores the line, and its request is inserted by it;
-- neither is ever deleted. A foreign-key check per line proved nothing more, and took a share lock on the same rows.
alter table authority_sandbox.request_lines drop constraint request_lines_irm_number_fkey;
alter table authority_sandbox.request_lines drop constraint request_lines_request_id_fkey;

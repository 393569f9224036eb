-- A final GenEBRC request as the list shows it (its record of GET /genebrc, the JSON text exactly as the list renders
-- it): a request that has reached a final state never changes, so its record is rendered once and list pages are the
-- stored texts joined. A row exists only for a final request. The lifecycle writes it in the transaction of the final
-- move; requests that were final before this migration get theirs from the list the first time it renders them
-- (docs/decisions.md, "Stored records of final requests"). A table of its own, so that the many reads of a request's
-- row (`select *`) never carry the text.
create table genebrc_request_records (
  request_id uuid primary key references genebrc_requests (id),
  record text not null
);

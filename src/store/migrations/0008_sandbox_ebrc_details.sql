-- The sandbox answers fetchEBRCDetails from the lines it generated eBRCs for: it keeps each line's invoice, as the
-- authority does. Lines stored before this have none and are not reported (the service still lists their eBRCs
-- from its own store).
alter table sandbox.request_lines add column sb_cum_invoice_number text;
alter table sandbox.request_lines add column sb_cum_invoice_date date;

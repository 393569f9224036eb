-- What the exporter's portal and bank do outside the wire protocol (the sandbox's test helpers, contract 13): IRMs
-- added, amended (A) or cancelled (C) by the bank, with whatever figures the bank gives (an ORM amount leaves less
-- available than remitted minus utilised), and eBRCs made or cancelled on the portal.
alter table authority_sandbox.irms drop constraint irms_balance_adds_up;
alter table authority_sandbox.irms add column irm_status text not null default 'F' check (irm_status in ('F', 'A', 'C'));
alter table authority_sandbox.request_lines add column ebrc_cancelled_at timestamptz;

-- The eBRC register (contract 13): each customer's eBRCs as the authority's fetchEBRCDetails reports them and as this
-- service's requests generate them, with where they were made and whether they stand.
create table ebrcs (
  id uuid primary key,
  platform_id uuid not null references platforms (id),
  platform_customer_id uuid not null references platform_customers (id),
  ebrc_number text not null,
  ebrc_date date not null,
  irm_number text not null,
  sb_cum_invoice_number text not null,
  sb_cum_invoice_date date not null,
  realised_value_fcc numeric(16, 2) not null,
  currency text not null,
  iec_code text not null,
  -- This customer's request that generated it; null when it was made elsewhere or by another customer's request.
  request_id text,
  source text not null check (source in ('this_service', 'elsewhere')),
  status text not null check (status in ('generated', 'cancelled')),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index ebrcs_customer_number on ebrcs (platform_customer_id, ebrc_number);
create index ebrcs_customer_newest on ebrcs (platform_customer_id, ebrc_date desc, ebrc_number);

-- The eBRCs generated here before the register existed.
insert into ebrcs (id, platform_id, platform_customer_id, ebrc_number, ebrc_date, irm_number, sb_cum_invoice_number,
  sb_cum_invoice_date, realised_value_fcc, currency, iec_code, request_id, source, status)
select gen_random_uuid(), request.platform_id, request.platform_customer_id, line.ebrc_number, line.ebrc_date, line.irm_number,
  line.sb_cum_invoice_number, to_date(line.payload->>'sbCumInvoiceDate', 'DDMMYYYY'), line.mapped_amount,
  line.payload->>'irmFCC', request.iec_number, request.request_id, 'this_service', 'generated'
from genebrc_request_lines line
join genebrc_requests request on request.id = line.request_id
where line.status = 'GENERATED' and line.ebrc_number is not null and line.ebrc_date is not null;

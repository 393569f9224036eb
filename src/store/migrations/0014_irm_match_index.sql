-- A match reads a customer's IRMs received within the invoices' dates, oldest first (findIrmsForMatch). Without an
-- index that leads with the customer and the remittance date, it scanned every IRM of the customer (the whole table,
-- for a customer with most of them): 47 ms at 200,000 IRMs, growing with them. The remittance date never changes, so
-- a reservation's update stays a HOT update.
create index irms_customer_received on irms (platform_customer_id, remittance_date, irm_number);

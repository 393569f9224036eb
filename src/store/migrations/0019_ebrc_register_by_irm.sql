-- The IRM utilisation report reads, for each batch of a customer's IRMs, the registered eBRCs mapped to them
-- (ebrcsOfIrms in src/store/reports.ts): without this index every batch would walk all of the customer's eBRCs.
create index ebrcs_customer_irm on ebrcs (platform_customer_id, irm_number);

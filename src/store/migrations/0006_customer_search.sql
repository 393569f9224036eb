-- The customer search compares lowercased name and email. Kept beside them, so that a search does not lowercase every
-- customer's text again: that was most of a search's cost (ILIKE over 1,000 customers: 1.6 ms; LIKE on the stored
-- lowercase text: 0.5 ms; docs/performance.md).
alter table platform_customers
  add column name_lower text generated always as (lower(name)) stored,
  add column email_lower text generated always as (lower(email)) stored;

-- The IRMs follow the authority (contract 13): its figures are stored as they come, whatever relation they keep (an
-- ORM amount leaves less available than remitted minus utilised), and its irmStatus letter is kept (C: cancelled).
alter table irms drop constraint irms_balance_adds_up;
alter table irms add column authority_status text not null default 'F';

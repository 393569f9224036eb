-- The monthly report e-mail (contract 15, 16): a user's choice, the attachment a message carries, and a record per
-- user and month that the message was written (in the message's transaction), so that it is written once.
alter table console_users add column monthly_report boolean not null default false;

alter table mail_outbox drop constraint mail_outbox_kind_check;
alter table mail_outbox add constraint mail_outbox_kind_check check (kind in ('notification', 'digest', 'password_reset', 'invitation', 'monthly_report'));
alter table mail_outbox add column attachment_name text;
alter table mail_outbox add column attachment_type text;
alter table mail_outbox add column attachment bytea;

create table monthly_report_mails (
  user_id uuid not null references console_users (id) on delete cascade,
  month date not null,
  mail_id uuid references mail_outbox (id) on delete set null,
  created_at timestamptz not null default now(),
  primary key (user_id, month)
);

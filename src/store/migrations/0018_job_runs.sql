-- Background work a process began and never finished (it died while working it): a row per queue and key while a job
-- runs, deleted when it ends in any ordinary way (done, failed, retried). A key whose runs went unfinished more than
-- a few times in a row is poison (it takes its process down) and is set aside instead of run again (src/jobs/poison.ts).
create table job_runs (
  queue text not null,
  job_key text not null,
  unfinished integer not null,
  updated_at timestamptz not null default now(),
  primary key (queue, job_key)
);

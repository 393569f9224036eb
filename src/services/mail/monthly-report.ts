import { Writable } from 'node:stream';
import type { Kysely } from 'kysely';
import * as store from '../../store/mail.ts';
import type { Schema } from '../../store/schema.ts';
import { platformEbrcRegister } from '../reports/ebrc-register.ts';
import { monthlyReportMessage } from './messages.ts';
import type { MailOutbox } from './outbox.ts';

/** The largest register attached to a monthly message; a larger one is not attached and the message links to the Reports page. */
export const MONTHLY_ATTACHMENT_MAX_BYTES = 5 * 1024 * 1024;

/** The UTC calendar month before the one of `now`: its first and last day (YYYY-MM-DD). */
export function previousMonthOf(now: Date): { fromDate: string; toDate: string } {
  const first = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1));
  const last = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 0));
  return { fromDate: first.toISOString().slice(0, 10), toDate: last.toISOString().slice(0, 10) };
}

class TooLarge extends Error {}

/** The platform-wide register CSV of the period, or null when it is larger than `maxBytes`. */
export async function registerCsv(db: Kysely<Schema>, platformId: string, period: { fromDate: string; toDate: string }, maxBytes: number): Promise<{ fileName: string; contentType: string; content: Buffer | null }> {
  const report = await platformEbrcRegister({ db }, platformId, { format: 'csv', ...period });
  const chunks: Buffer[] = [];
  let size = 0;
  const out = new Writable({
    write(chunk: Buffer | string, _encoding, callback) {
      const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      size += buffer.length;
      if (size > maxBytes) return callback(new TooLarge());
      chunks.push(buffer);
      callback();
    },
  });
  try {
    await report.write(out);
  } catch (error) {
    if (error instanceof TooLarge || size > maxBytes) return { fileName: report.fileName, contentType: report.contentType, content: null };
    throw error;
  }
  return { fileName: report.fileName, contentType: report.contentType, content: Buffer.concat(chunks) };
}

/**
 * Writes the monthly report messages due at `now` (contract 15, 16): for each enabled user who chose it and has no
 * message yet for the previous UTC month, one message with the platform's eBRC register of that month attached as CSV
 * (or, above `maxBytes`, a link to the console's Reports page instead), written through the outbox in the transaction
 * that records it for the user and month, so that a second run or a restart never writes it again. The register is
 * made once per platform. Returns how many messages were written.
 */
export async function composeMonthlyReports(db: Kysely<Schema>, outbox: MailOutbox, now: Date, options: { maxBytes?: number; limit?: number } = {}): Promise<number> {
  const period = previousMonthOf(now);
  const users = await store.monthlyReportRecipients(db, period.fromDate, options.limit ?? 500);
  const registers = new Map<string, Awaited<ReturnType<typeof registerCsv>>>();
  let written = 0;
  for (const user of users) {
    let register = registers.get(user.platform_id);
    if (register === undefined) {
      register = await registerCsv(db, user.platform_id, period, options.maxBytes ?? MONTHLY_ATTACHMENT_MAX_BYTES);
      registers.set(user.platform_id, register);
    }
    const attachment = register.content === null ? undefined : { fileName: register.fileName, contentType: register.contentType, content: register.content };
    const message = monthlyReportMessage(outbox.publicUrl, { email: user.email, timeZone: user.time_zone, platformName: user.name }, { ...period, fileName: register.fileName, attached: attachment !== undefined, maxBytes: options.maxBytes ?? MONTHLY_ATTACHMENT_MAX_BYTES });
    const composed = await db.transaction().execute(async (tx) => {
      if (!(await store.claimMonthlyReport(tx, user.id, period.fromDate))) return false;
      const [id] = await outbox.enqueue(tx, [{ platformId: user.platform_id, userId: user.id, to: user.email, kind: 'monthly_report', message, attachment }]);
      await store.recordMonthlyReportMail(tx, user.id, period.fromDate, id!);
      return true;
    });
    if (composed) written++;
  }
  if (written > 0) outbox.committed();
  return written;
}

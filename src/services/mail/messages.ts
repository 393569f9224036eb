import path from 'node:path';
import { Eta } from 'eta';

/**
 * Every e-mail the service sends, in plain text and HTML, from the templates in ./templates (one pair per kind, the
 * HTML ones in layout.html.eta), each with the platform's name and its times in the recipient's time zone.
 */

const TEMPLATES = path.join(import.meta.dirname, 'templates');
const html = new Eta({ views: TEMPLATES, cache: true, autoEscape: true });
const text = new Eta({ views: TEMPLATES, cache: true, autoEscape: false });

export type Composed = { subject: string; text: string; html: string };

/** The notification types a user may choose (contract 15), in the preferences page's order, with their titles. */
export const NOTIFICATION_TYPES = [
  'genebrc.request.failed',
  'genebrc.request.errored',
  'genebrc.request.partially_processed',
  'platform_customer.credentials_invalid',
  'bulk_upload.completed',
  'reconciliation.completed',
] as const;
export type NotificationType = (typeof NOTIFICATION_TYPES)[number];

export const NOTIFICATION_TITLES: Readonly<Record<NotificationType, string>> = {
  'genebrc.request.failed': 'A request failed at acknowledgement',
  'genebrc.request.errored': 'A request errored',
  'genebrc.request.partially_processed': 'A request was partially processed',
  'platform_customer.credentials_invalid': "The authority refused a customer's credentials",
  'bulk_upload.completed': 'An upload completed with failed rows',
  'reconciliation.completed': 'A reconciliation found changes made outside',
};

export function isNotificationType(type: string): type is NotificationType {
  return (NOTIFICATION_TYPES as readonly string[]).includes(type);
}

/** Whether the time zone is one this runtime knows (an IANA name such as Asia/Kolkata, or UTC). */
export function isTimeZone(zone: string): boolean {
  if (zone.length === 0 || zone.length > 64) return false;
  try {
    new Intl.DateTimeFormat('en-GB', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** A moment as the recipient reads it: "28 Nov 2026, 17:30 GMT+5:30" in their zone (UTC when it is unknown). */
export function inZone(at: Date, zone: string): string {
  return new Intl.DateTimeFormat('en-GB', {
    timeZone: isTimeZone(zone) ? zone : 'UTC',
    day: 'numeric',
    month: 'short',
    year: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
    timeZoneName: 'short',
  }).format(at);
}

const FOOTER_NOTIFICATION = 'You receive this because of your notification choices in the console (Notifications).';
const FOOTER_ACCOUNT = 'You receive this because of an action on your console account.';

export type Recipient = { email: string; timeZone: string; platformName: string };
/** An event as a notification tells it: one line, and the console page that shows it. */
export type Notice = { eventId: string; type: NotificationType; at: Date; summary: string };

function both(name: string, data: Record<string, unknown>, subject: string): Composed {
  const values = { ...data, subject };
  return { subject, text: text.render(`./${name}.text.eta`, values).trim() + '\n', html: html.render(`./${name}.html.eta`, values) };
}

export function eventLink(publicUrl: string, eventId: string): string {
  return `${publicUrl}/console/events/${encodeURIComponent(eventId)}`;
}

export function notificationMessage(publicUrl: string, to: Recipient, notice: Notice): Composed {
  const headline = NOTIFICATION_TITLES[notice.type];
  return both('notification', {
    platformName: to.platformName,
    headline,
    summary: notice.summary,
    when: inZone(notice.at, to.timeZone),
    link: eventLink(publicUrl, notice.eventId),
    footer: FOOTER_NOTIFICATION,
  }, `[${to.platformName}] ${headline}`);
}

/** One message for a day's notifications, grouped by type in the preferences' order, oldest first within each. */
export function digestMessage(publicUrl: string, to: Recipient, notices: readonly Notice[]): Composed {
  const items = notices.map((notice) => ({ ...notice, when: inZone(notice.at, to.timeZone), link: eventLink(publicUrl, notice.eventId) }));
  const groups = NOTIFICATION_TYPES.flatMap((type) => {
    const ofType = items.filter((item) => item.type === type);
    return ofType.length === 0 ? [] : [{ title: NOTIFICATION_TITLES[type], items: ofType }];
  });
  return both('digest', { platformName: to.platformName, items, groups, footer: FOOTER_NOTIFICATION }, `[${to.platformName}] Daily summary: ${notices.length} notification${notices.length === 1 ? '' : 's'}`);
}

export function passwordResetMessage(to: Recipient, link: string, expiresAt: Date): Composed {
  return both('password-reset', { platformName: to.platformName, email: to.email, link, expires: inZone(expiresAt, to.timeZone), footer: FOOTER_ACCOUNT }, `[${to.platformName}] Reset your console password`);
}

export function invitationMessage(invitation: { platformName: string; inviter: string; role: string; link: string; expiresAt: Date }): Composed {
  return both('invitation', {
    platformName: invitation.platformName,
    inviter: invitation.inviter,
    role: invitation.role,
    link: invitation.link,
    expires: inZone(invitation.expiresAt, 'UTC'),
    footer: FOOTER_ACCOUNT,
  }, `[${invitation.platformName}] You are invited to the console`);
}

/**
 * What a notification says of its event, or null when the event does not call for one: an upload only when rows
 * failed, a reconciliation only when it found changes made outside.
 */
export function noticeOf(event: { id: string; type: string; timestamp: string; data: unknown }): Notice | null {
  if (!isNotificationType(event.type)) return null;
  const data = (event.data ?? {}) as Record<string, unknown>;
  const at = new Date(event.timestamp);
  const name = (value: unknown) => (typeof value === 'string' && value !== '' ? value : '');
  switch (event.type) {
    case 'genebrc.request.failed':
    case 'genebrc.request.errored':
    case 'genebrc.request.partially_processed': {
      const failed = Number(data.recordFailCount ?? 0);
      const processed = Number(data.recordProCount ?? 0);
      const verb = event.type === 'genebrc.request.failed' ? 'failed at acknowledgement' : event.type === 'genebrc.request.errored' ? 'errored' : 'was partially processed';
      return { eventId: event.id, type: event.type, at, summary: `Request ${name(data.requestId)} ${verb}: ${processed} line${processed === 1 ? '' : 's'} processed, ${failed} failed.` };
    }
    case 'platform_customer.credentials_invalid':
      return { eventId: event.id, type: event.type, at, summary: `The authority refused the stored credentials of ${name(data.companyName) || name(data.name) || 'a customer'}${data.iecCode ? ` (IEC ${name(data.iecCode)})` : ''}. Store new ones to generate again.` };
    case 'bulk_upload.completed': {
      const failed = Number(data.rowsFailed ?? 0);
      if (!(failed > 0)) return null;
      return { eventId: event.id, type: event.type, at, summary: `Upload ${name(data.fileName)} completed: ${failed} of ${Number(data.rowCount ?? 0)} rows failed.` };
    }
    case 'reconciliation.completed': {
      const changes = ['irmsUpdated', 'irmsCancelled', 'ebrcsDiscovered', 'ebrcsCancelled'].map((key) => Number(data[key] ?? 0));
      if (!changes.some((count) => count > 0)) return null;
      const [updated, cancelled, discovered, ebrcsCancelled] = changes;
      return {
        eventId: event.id,
        type: event.type,
        at,
        summary: `A reconciliation found changes made outside: ${updated} IRMs updated, ${cancelled} IRMs cancelled, ${discovered} eBRCs found, ${ebrcsCancelled} eBRCs cancelled.`,
      };
    }
  }
}

/** The month's register: attached, or (larger than the cap) a link to the console's Reports page for the period. */
export function monthlyReportMessage(publicUrl: string, to: Recipient, report: { fromDate: string; toDate: string; fileName: string; attached: boolean; maxBytes: number }): Composed {
  const month = new Intl.DateTimeFormat('en-GB', { timeZone: 'UTC', month: 'long', year: 'numeric' }).format(new Date(`${report.fromDate}T00:00:00Z`));
  const link = `${publicUrl}/console/reports?fromDate=${report.fromDate}&toDate=${report.toDate}`;
  return both('monthly-report', {
    platformName: to.platformName,
    month,
    fromDate: report.fromDate,
    toDate: report.toDate,
    fileName: report.fileName,
    attached: report.attached,
    limit: `${Math.round(report.maxBytes / (1024 * 1024))} MB`,
    link,
    footer: FOOTER_NOTIFICATION,
  }, `[${to.platformName}] eBRC register for ${month}`);
}

import fs from 'node:fs';
import path from 'node:path';
import nodemailer from 'nodemailer';

/** A message ready to go: its Message-ID is derived from its outbox id, the same on every attempt. */
export type Envelope = {
  outboxId: string;
  from: string;
  to: string;
  subject: string;
  text: string;
  html: string;
  attachment?: { fileName: string; contentType: string; content: Buffer } | undefined;
};

export type SentReport = { where: string };

/** Where messages go: an SMTP server (SMTP_URL), or .eml files in the data folder (the embedded default). */
export interface MailTransport {
  send(envelope: Envelope): Promise<SentReport>;
  close(): void;
}

/** The domain of MAIL_FROM's address ("Name <a@b.example>" or "a@b.example"), for Message-IDs. */
export function domainOf(from: string): string {
  const match = /@([^>\s]+)>?\s*$/.exec(from);
  return match?.[1] ?? 'localhost';
}

/** `<outbox id@domain>`: a receiver seeing a message twice (an attempt repeated after a kill) sees the same id. */
export function messageIdOf(outboxId: string, from: string): string {
  return `<${outboxId}@${domainOf(from)}>`;
}

function nodemailerMessage(envelope: Envelope) {
  return {
    from: envelope.from,
    to: envelope.to,
    subject: envelope.subject,
    text: envelope.text,
    html: envelope.html,
    messageId: messageIdOf(envelope.outboxId, envelope.from),
    headers: { 'X-Ebrc-Outbox-Id': envelope.outboxId },
    attachments: envelope.attachment === undefined ? [] : [{ filename: envelope.attachment.fileName, contentType: envelope.attachment.contentType, content: envelope.attachment.content }],
  };
}

/** nodemailer over SMTP_URL: smtps:// is TLS from the start; smtp:// upgrades with STARTTLS when the server offers it. */
export function smtpTransport(url: string, options: { timeoutMs?: number } = {}): MailTransport {
  const timeout = options.timeoutMs ?? 30_000;
  const transporter = nodemailer.createTransport(url, { connectionTimeout: timeout, greetingTimeout: timeout, socketTimeout: timeout } as never);
  return {
    async send(envelope) {
      const info = await transporter.sendMail(nodemailerMessage(envelope));
      return { where: `SMTP: ${String(info.response ?? 'accepted').slice(0, 200)}` };
    },
    close() {
      transporter.close();
    },
  };
}

/**
 * Without SMTP_URL: each message is written whole (headers and both bodies) to `<folder>/<outbox id>.eml`, owner-only
 * (0600), through a temporary file renamed into place, so that a file there is always complete. Writing it again
 * (an attempt repeated after a kill) replaces it with the same message.
 */
export function emlTransport(folder: string): MailTransport {
  const transporter = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  return {
    async send(envelope) {
      fs.mkdirSync(folder, { recursive: true, mode: 0o700 });
      const info = await transporter.sendMail(nodemailerMessage(envelope));
      const file = path.join(folder, `${envelope.outboxId}.eml`);
      const temporary = `${file}.${process.pid}.tmp`;
      fs.writeFileSync(temporary, info.message as Buffer, { mode: 0o600 });
      fs.chmodSync(temporary, 0o600);
      fs.renameSync(temporary, file);
      return { where: file };
    },
    close() {
      transporter.close();
    },
  };
}

export function emlFolderOf(dataDir: string): string {
  return path.join(dataDir, 'mail');
}

import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { sleep } from './workflow.ts';

/** What the test server does with the next message: take it, refuse it (a 5xx), or drop the connection. */
export type SmtpBehaviour = 'accept' | 'refuse' | 'drop';

export type Received = { mail: ParsedMail; messageId: string; to: string; raw: string };

/**
 * A real SMTP server on 127.0.0.1 for the e-mail tests (smtp-server): plain SMTP, no STARTTLS offered, any sender.
 * Every message it takes is parsed (mailparser) and kept; `behaviour` says what happens to the next ones.
 */
export class TestSmtp {
  readonly received: Received[] = [];
  /** Messages whose data arrived whole, whatever the answer (refused, dropped or taken). */
  readonly seen: string[] = [];
  behaviour: SmtpBehaviour = 'accept';
  /** Called once a message's data has arrived whole, before the answer (the kill test kills the sender there). */
  onData: ((raw: string) => Promise<void> | void) | undefined;
  readonly #server: SMTPServer;
  #port = 0;

  private constructor() {
    this.#server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS', 'AUTH'],
      logger: false,
      onData: (stream, session, callback) => {
        const chunks: Buffer[] = [];
        stream.on('data', (chunk: Buffer) => chunks.push(chunk));
        stream.on('end', () => {
          void (async () => {
            const raw = Buffer.concat(chunks).toString('utf8');
            const parsed = await simpleParser(raw);
            this.seen.push(parsed.messageId ?? '');
            await this.onData?.(raw);
            if (this.behaviour === 'refuse') {
              callback(Object.assign(new Error('Mailbox unavailable: refused by the test server'), { responseCode: 550 }));
              return;
            }
            if (this.behaviour === 'drop') {
              const connections = (this.#server as unknown as { connections: Set<{ id: string; _socket: { destroy(): void } }> }).connections;
              for (const connection of connections) if (connection.id === session.id) connection._socket.destroy();
              return;
            }
            const to = session.envelope.rcptTo.map((address) => address.address).join(',');
            this.received.push({ mail: parsed, messageId: parsed.messageId ?? '', to, raw });
            callback();
          })();
        });
      },
    });
  }

  static async start(): Promise<TestSmtp> {
    const smtp = new TestSmtp();
    await new Promise<void>((resolve, reject) => {
      smtp.#server.once('error', reject);
      smtp.#server.listen(0, '127.0.0.1', () => resolve());
    });
    smtp.#port = (smtp.#server.server.address() as { port: number }).port;
    return smtp;
  }

  url(): string {
    return `smtp://127.0.0.1:${this.#port}`;
  }

  /** The messages to `to` taken so far. */
  to(address: string): Received[] {
    return this.received.filter((message) => message.to.toLowerCase() === address.toLowerCase());
  }

  /** Waits (up to `timeoutMs`, generous) until `ready` holds; fails naming `what` otherwise. */
  async waitFor<T>(what: string, ready: () => T | undefined | false, timeoutMs = 60_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const value = ready();
      if (value !== undefined && value !== false) return value;
      await sleep(50);
    }
    throw new Error(`timed out waiting for ${what} (received: ${this.received.map((message) => `${message.to}: ${message.mail.subject}`).join('; ') || 'nothing'})`);
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

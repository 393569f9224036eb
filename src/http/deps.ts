import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Config } from '../config.ts';
import type { DeliveryScheduler } from '../services/webhook-endpoints.ts';
import type { BulkUploads } from '../services/bulk-uploads.ts';
import type { ServiceContext } from '../services/context.ts';
import type { RequestList } from '../services/genebrc/list.ts';
import type { RequestProgress } from '../services/genebrc/progress.ts';
import type { PushService } from '../services/genebrc/push.ts';
import type { IrmPuller } from '../services/irms.ts';
import type { EventOutbox } from '../services/outbox.ts';
import type { MailOutbox } from '../services/mail/outbox.ts';
import type { Reconciliations } from '../services/reconciliations.ts';
import type { ApiKeyAuthenticator } from '../services/platforms.ts';
import type { Database } from '../store/database.ts';

/** What the routes are given: the services the app is built over (its own module, so routes need not import the app). */
export type Deps = {
  config: Config;
  database: Database;
  context: ServiceContext;
  irmPuller: IrmPuller;
  push: PushService;
  progress: RequestProgress;
  requestList: RequestList;
  outbox: EventOutbox;
  /** The mail outbox (contract 15): notifications, password resets, invitations. */
  mail: MailOutbox;
  deliveries: DeliveryScheduler;
  uploads: BulkUploads;
  reconciliations: Reconciliations;
  /**
   * This process's API key authenticator, built by buildApp and given to the console (its API keys page): a key
   * revoked there is forgotten at once, as through the admin API. Absent outside the app.
   */
  apiKeyAuthenticator?: Pick<ApiKeyAuthenticator, 'forget'>;
};

/** The app as the routes see it: Fastify with the TypeBox type provider. */
export type Api = FastifyInstance<Server, IncomingMessage, ServerResponse, FastifyBaseLogger, TypeBoxTypeProvider>;

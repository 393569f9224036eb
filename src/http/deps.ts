import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Config } from '../config.ts';
import type { DeliveryScheduler } from '../jobs/scheduler.ts';
import type { ServiceContext } from '../services/context.ts';
import type { RequestList } from '../services/genebrc/list.ts';
import type { RequestProgress } from '../services/genebrc/progress.ts';
import type { PushService } from '../services/genebrc/push.ts';
import type { IrmPuller } from '../services/irms.ts';
import type { EventOutbox } from '../services/outbox.ts';
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
  deliveries: DeliveryScheduler;
};

/** The app as the routes see it: Fastify with the TypeBox type provider. */
export type Api = FastifyInstance<Server, IncomingMessage, ServerResponse, FastifyBaseLogger, TypeBoxTypeProvider>;

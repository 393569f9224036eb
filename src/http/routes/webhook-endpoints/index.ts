import type { Api, Deps } from '../../deps.ts';
import { createWebhookEndpointRoute } from './create.ts';
import { deleteWebhookEndpointRoute } from './delete.ts';
import { listWebhookDeliveriesRoute } from './deliveries.ts';
import { getWebhookEndpointRoute } from './get.ts';
import { listWebhookEndpointsRoute } from './list.ts';
import { redeliverRoute } from './redeliver.ts';
import { rotateWebhookSecretRoute } from './rotate-secret.ts';
import { testWebhookEndpointRoute } from './test.ts';
import { updateWebhookEndpointRoute } from './update.ts';

export function webhookEndpointRoutes(app: Api, deps: Deps): void {
  createWebhookEndpointRoute(app, deps);
  listWebhookEndpointsRoute(app, deps);
  getWebhookEndpointRoute(app, deps);
  updateWebhookEndpointRoute(app, deps);
  deleteWebhookEndpointRoute(app, deps);
  rotateWebhookSecretRoute(app, deps);
  testWebhookEndpointRoute(app, deps);
  listWebhookDeliveriesRoute(app, deps);
  redeliverRoute(app, deps);
}

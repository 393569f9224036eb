import type { Api, Deps } from '../../deps.ts';
import { putAuthorityApiCredentialsRoute } from './authority-api-credentials.ts';
import { checkAuthorityCredentialsRoute } from './check-authority-credentials.ts';
import { createPlatformCustomerRoute } from './create.ts';
import { getPlatformCustomerRoute } from './get.ts';
import { matchIrmsRoute } from './irm-match.ts';
import { irmTemplateRoute } from './irm-template.ts';
import { listPlatformCustomersRoute } from './list.ts';
import { reconcileRoutes } from './reconcile.ts';

export function platformCustomerRoutes(app: Api, deps: Deps): void {
  createPlatformCustomerRoute(app, deps);
  listPlatformCustomersRoute(app, deps);
  getPlatformCustomerRoute(app, deps);
  checkAuthorityCredentialsRoute(app, deps);
  putAuthorityApiCredentialsRoute(app, deps);
  matchIrmsRoute(app, deps);
  irmTemplateRoute(app, deps);
  reconcileRoutes(app, deps);
}

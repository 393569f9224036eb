import type { Api, Deps } from '../../deps.ts';
import { ebrcCertificateRoute } from './certificate.ts';
import { listEbrcsRoute } from './list.ts';

export function ebrcRoutes(app: Api, deps: Deps): void {
  listEbrcsRoute(app, deps);
  ebrcCertificateRoute(app, deps);
}

import type { Api, Deps } from '../../deps.ts';
import { ebrcRegisterRoutes } from './ebrc-register.ts';
import { irmUtilisationRoute } from './irm-utilisation.ts';

export function reportRoutes(app: Api, deps: Deps): void {
  ebrcRegisterRoutes(app, deps);
  irmUtilisationRoute(app, deps);
}

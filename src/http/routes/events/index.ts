import type { Api, Deps } from '../../deps.ts';
import { getEventRoute } from './get.ts';
import { listEventsRoute } from './list.ts';

export function eventRoutes(app: Api, deps: Deps): void {
  listEventsRoute(app, deps);
  getEventRoute(app, deps);
}

import type { Api, Deps } from '../deps.ts';
import type { ConsoleSessions } from '../../services/console-sessions.ts';
import type { TwoFactor } from '../../services/two-factor.ts';

/** What console pages are given: the app's services, and the console's own sessions and second factors. */
export type ConsoleDeps = Deps & { consoleSessions: ConsoleSessions; twoFactor: TwoFactor };

/**
 * One page of the console (or a few that belong together): its routes, registered under /console, and its entry in
 * the navigation. Every route requires a signed-in user (`signedIn(request)`, `platformOf(request)` in render.ts) and
 * every POST a CSRF token (`<input type="hidden" name="_csrf" value="<%= it.csrf %>">` in its form): the console
 * plugin checks both before the route runs. Routes call the same services as the API's routes, with the user's
 * platform, and render views with `render(...)`.
 */
export type ConsolePage = {
  /** Its entry in the navigation (in the registry's order); none for pages reached only from others. */
  nav?: { label: string; href: string };
  routes(app: Api, deps: ConsoleDeps): void;
};

import type { ConsolePage } from '../page.ts';
import { customersPage } from './customers.ts';
import { overviewPage } from './overview.ts';
import { generatePage } from './generate.ts';
import { requestsPage } from './requests.ts';
import { irmsPage } from './irms.ts';
import { ebrcsPage } from './ebrcs.ts';
import { uploadsPage } from './uploads.ts';
import { webhooksPage } from './webhooks.ts';
import { eventsPage } from './events.ts';
import { apiKeysPage } from './api-keys.ts';
import { reportsPage } from './reports.ts';
import { usersPage } from './users.ts';
import { accountSettingsPage } from './account.ts';
import { auditLogPage } from './audit-log.ts';
import { accountLinksPage, invitationsPage, notificationsPage, outboxPage } from './mail.ts';

/**
 * The console's pages, in the navigation's order. A new page is a file in this folder (its routes and its nav entry),
 * its views in ../views/, and one line here (docs/architecture.md, "The web console").
 */
export const CONSOLE_PAGES: readonly ConsolePage[] = [
  overviewPage,
  customersPage,
  generatePage,
  requestsPage,
  uploadsPage,
  irmsPage,
  ebrcsPage,
  reportsPage,
  webhooksPage,
  eventsPage,
  apiKeysPage,
  usersPage,
  accountSettingsPage,
  auditLogPage,
  notificationsPage,
  outboxPage,
  invitationsPage,
  accountLinksPage,
];

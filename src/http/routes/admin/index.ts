import { listAuditLogAdminRoute } from './list-audit-log.ts';
import type { Api, Deps } from '../../deps.ts';
import type { ApiKeyAuthenticator } from '../../../services/platforms.ts';
import { backupRoute } from './backup.ts';
import { createPlatformRoute } from './create-platform.ts';
import { createUserRoute } from './create-user.ts';
import { encryptionStatusRoute } from './encryption-status.ts';
import { getKeyRoute } from './get-key.ts';
import { getPlatformRoute } from './get-platform.ts';
import { issueKeyRoute } from './issue-key.ts';
import { listKeysRoute } from './list-keys.ts';
import { listPlatformsRoute } from './list-platforms.ts';
import { listUsersRoute } from './list-users.ts';
import { revokeKeyRoute } from './revoke-key.ts';
import { updatePlatformRoute } from './update-platform.ts';
import { updateUserRoute } from './update-user.ts';

/**
 * The operator's admin API (contract 10), registered under /admin/v1 behind the admin token. `authenticator` is this
 * process's API key authenticator: a key revoked here is dropped from its cache at once.
 */
export function adminRoutes(app: Api, deps: Deps, authenticator: ApiKeyAuthenticator): void {
  createPlatformRoute(app, deps);
  listPlatformsRoute(app, deps);
  getPlatformRoute(app, deps);
  updatePlatformRoute(app, deps);
  issueKeyRoute(app, deps);
  listKeysRoute(app, deps);
  getKeyRoute(app, deps);
  revokeKeyRoute(app, deps, authenticator);
  createUserRoute(app, deps);
  listUsersRoute(app, deps);
  updateUserRoute(app, deps);
  backupRoute(app, deps);
  encryptionStatusRoute(app, deps);
  listAuditLogAdminRoute(app, deps);
}

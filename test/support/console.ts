import type { ConsoleRole } from '../../src/domain/console-roles.ts';
import { createConsoleUser } from '../../src/services/console-users.ts';
import { SYSTEM_SOURCE } from '../../src/services/audit.ts';
import type { Harness } from './harness.ts';

/** The password of every console user the tests make (at least 12 characters, as the admin API requires). */
export const PASSWORD = 'correct horse battery staple';

export type ConsoleUserLogin = { id: string; email: string; password: string };

/**
 * A console user of the platform, made through the console users' service (scrypt hash, as the admin API makes them):
 * an owner unless told otherwise.
 */
export async function addConsoleUser(h: Pick<Harness, 'database'>, platformId: string, email: string, role: ConsoleRole = 'owner'): Promise<ConsoleUserLogin> {
  const user = await createConsoleUser(h.database.db, platformId, { email, password: PASSWORD, role }, SYSTEM_SOURCE);
  return { id: user.id, email, password: PASSWORD };
}

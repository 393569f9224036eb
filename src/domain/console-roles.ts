/**
 * The roles of console users (contract 14), from most to least able: an `owner` does everything, including the
 * platform's users and API keys; an `operator` works with customers, credentials, pushes, uploads and webhooks; a
 * `viewer` reads only. Each role can do what the roles below it can.
 */
export const CONSOLE_ROLES = ['owner', 'operator', 'viewer'] as const;
export type ConsoleRole = (typeof CONSOLE_ROLES)[number];

export function isRole(value: unknown): value is ConsoleRole {
  return typeof value === 'string' && (CONSOLE_ROLES as readonly string[]).includes(value);
}

/** A role read from the database (its check constraint allows these three only). */
export function toRole(value: string): ConsoleRole {
  if (!isRole(value)) throw new Error(`unknown console role ${value}`);
  return value;
}

/** Whether `role` may do what `needed` may. */
export function roleAllows(role: ConsoleRole, needed: ConsoleRole): boolean {
  return CONSOLE_ROLES.indexOf(role) <= CONSOLE_ROLES.indexOf(needed);
}

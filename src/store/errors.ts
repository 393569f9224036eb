/** True when `error` is PostgreSQL's unique violation on the named constraint or index (both backends). */
export function isUniqueViolation(error: unknown, constraint: string): boolean {
  const e = error as { code?: string; constraint?: string; message?: string } | null;
  return e?.code === '23505' && (e.constraint === constraint || (e.message ?? '').includes(`"${constraint}"`));
}

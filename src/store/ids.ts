const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Ids are uuid columns: anything else cannot name a row (and must not reach SQL as a cast error). */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}

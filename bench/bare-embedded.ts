/**
 * The embedded database's limit route, the yardstick of the embedded run's ratios as bench/bare-server.ts is of the
 * PostgreSQL run's: one route, one primary-key SELECT on PGlite (in this process, as the service runs it), no
 * authentication, validation, logging or metrics. PGlite holds its folder alone, and the service holds its own, so
 * this opens a COPY of the seeded folder (bench/run.ts makes it before the service starts): BARE_PGLITE_DIR, the copied
 * `pgdata`. Started by bench/run.ts with BARE_PGLITE_DIR and PORT.
 */
import { PGlite } from '@electric-sql/pglite';
import Fastify from 'fastify';

const dataDir = process.env.BARE_PGLITE_DIR;
if (!dataDir) throw new Error('BARE_PGLITE_DIR is required');

// The service's parsers (src/store/database.ts): int8 as number, date as its text.
const INT8_OID = 20;
const DATE_OID = 1082;
const pglite = await PGlite.create(dataDir, {
  parsers: { [INT8_OID]: (value: string) => Number(value), [DATE_OID]: (value: string) => value },
});
const app = Fastify({ logger: false });

app.get('/health', async () => ({ status: 'ok' }));

app.get<{ Params: { id: string } }>('/customers/:id', async (request, reply) => {
  const { rows } = await pglite.query('select * from platform_customers where id = $1', [request.params.id]);
  if (rows.length === 0) return reply.code(404).send({ error: 'not found' });
  return rows[0];
});

const close = async (): Promise<void> => {
  await app.close();
  await pglite.close();
  process.exit(0);
};
process.on('SIGTERM', () => void close());
process.on('SIGINT', () => void close());

await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' });

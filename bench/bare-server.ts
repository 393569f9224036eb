/**
 * The reference for every figure of the benchmark: the least a Fastify service on this machine can
 * do per request. One route, one primary-key SELECT over a pg pool of the service's size, no
 * authentication, validation, logging or metrics. Started by bench/run.ts with DATABASE_URL and PORT.
 */
import Fastify from 'fastify';
import pg from 'pg';

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) throw new Error('DATABASE_URL is required');

// The same pool size as the service's (src/store/database.ts).
const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });
const app = Fastify({ logger: false });

app.get('/health', async () => ({ status: 'ok' }));

app.get<{ Params: { id: string } }>('/customers/:id', async (request, reply) => {
  const { rows } = await pool.query('select * from platform_customers where id = $1', [request.params.id]);
  if (rows.length === 0) return reply.code(404).send({ error: 'not found' });
  return rows[0];
});

const close = async (): Promise<void> => {
  await app.close();
  await pool.end();
  process.exit(0);
};
process.on('SIGTERM', () => void close());
process.on('SIGINT', () => void close());

await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' });

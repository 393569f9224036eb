import { createHash } from 'node:crypto';
import type { PGlite, QueryOptions, Results, Transaction } from '@electric-sql/pglite';

/** Statement texts prepared so far, by name; past the cap new texts run unprepared. */
const preparedNames = new Map<string, string>();
const MAX_PREPARED_STATEMENTS = 1_000;
/** Texts with more parameters than this are mostly IN lists whose length varies: each length would be its own statement. */
const MAX_PREPARED_PARAMETERS = 32;
/**
 * The embedded database keeps its prepared statements in the service's own memory (about 50 kB for a list page's
 * statement and its plan), so it prepares fewer texts than a PostgreSQL server does; past this, texts run unprepared.
 */
const MAX_EMBEDDED_PREPARED_STATEMENTS = 300;

let renamed = 0;

/** The name a statement text is prepared under, the same on every connection; undefined: run it unprepared. */
export function statementName(text: string, parameterCount: number): string | undefined {
  if (parameterCount === 0) return undefined;
  const known = preparedNames.get(text);
  if (known !== undefined || parameterCount > MAX_PREPARED_PARAMETERS || preparedNames.size >= MAX_PREPARED_STATEMENTS) return known;
  const name = baseName(text);
  preparedNames.set(text, name);
  return name;
}

function baseName(text: string): string {
  return `ebrc_${createHash('sha256').update(text).digest('base64url').slice(0, 24)}`;
}

/**
 * PostgreSQL's answer when a prepared statement's result columns changed under it (feature_not_supported): a migration
 * added a column to a table the statement reads with `*`, while this process ran.
 */
export function isStalePlan(error: unknown): boolean {
  const { code, routine, message } = (error ?? {}) as { code?: unknown; routine?: unknown; message?: unknown };
  if (code !== '0A000') return false;
  // The routine that raises it names it whatever the server's language; the message, for servers that send no routine.
  return routine === 'RevalidateCachedQuery' || (typeof message === 'string' && message.includes('cached plan must not change result type'));
}

/**
 * Gives a text whose prepared statement went stale a new name, so that every connection prepares it again at its next
 * call (on PostgreSQL the stale one stays on its connections, unused): without this, each connection would fail it
 * until restarted. Only the name that failed is replaced: calls that fail on it at once rename it once.
 */
export function renameStale(text: string, staleName: string): void {
  if (preparedNames.get(text) === staleName) preparedNames.set(text, `${baseName(text)}_r${++renamed}`);
}

/** What the wrapper needs of PGlite's module, loaded by the caller only when the embedded database is opened. */
export type PGliteProtocol = Pick<typeof import('@electric-sql/pglite'), 'parse' | 'protocol'>;

/**
 * PGlite as Kysely's PGlite dialect uses it, except that a statement with parameters is prepared once (a named
 * statement, kept in PGlite's one session) and then only bound and executed, in one exchange with the WebAssembly
 * instance. PGlite's own `query` parses, describes, plans and runs every call in six exchanges: a customer read took
 * 394 µs that way and 187 µs prepared (`npm run bench:embedded-statements`). Rows, types, errors and locking are PGlite's: the
 * results are parsed by its parser with its type parsers, under its query mutex, and outside a transaction under its
 * transaction mutex too, as its `query` runs them; an error carries the statement's text but not its parameters.
 * Up to MAX_EMBEDDED_PREPARED_STATEMENTS texts are prepared (a few more when new ones arrive at once), then the rest run
 * through PGlite's own `query`.
 */
export function preparingPGlite(pglite: PGlite, { parse, protocol }: PGliteProtocol): PGlite {
  /** Parameter types of the statements this instance has prepared, by name. */
  const prepared = new Map<string, number[]>();
  const { serialize } = protocol;

  async function run<T>(name: string, text: string, params: unknown[], options: QueryOptions | undefined, inTransaction: boolean): Promise<Results<T>> {
    try {
      return await runPrepared<T>(name, text, params, options, inTransaction);
    } catch (error) {
      if (!isStalePlan(error)) throw error;
      renameStale(text, name);
      await forget(name);
      // Outside a transaction nothing was done: the call is made again under the new name.
      if (inTransaction) throw error;
      const fresh = nameFor(text, params.length);
      return fresh === undefined ? pglite.query<T>(text, params, options) : runPrepared<T>(fresh, text, params, options, false);
    }
  }

  /** Closes a stale statement: PGlite's one session then holds no statement that no name leads to. */
  async function forget(name: string): Promise<void> {
    await pglite.runExclusive(async () => {
      if (!prepared.delete(name)) return;
      await pglite.execProtocolStream(Buffer.concat([serialize.close({ type: 'S', name }), serialize.sync()]), { syncToFs: false, throwOnError: false });
    });
  }

  async function runPrepared<T>(name: string, text: string, params: unknown[], options: QueryOptions | undefined, inTransaction: boolean): Promise<Results<T>> {
    await pglite._checkReady();
    const work = () =>
      pglite.runExclusive(async () => {
        try {
          let types = prepared.get(name);
          if (types === undefined) {
            const described = await pglite.execProtocolStream(
              Buffer.concat([serialize.parse({ name, text }), serialize.describe({ type: 'S', name }), serialize.sync()]),
              { syncToFs: false, onNotice: options?.onNotice },
            );
            types = parse.parseDescribeStatementResults(described);
            prepared.set(name, types);
          }
          const values = params.map((param, index) => {
            if (param === null || param === undefined) return null;
            const serializer = options?.serializers?.[types[index]!] ?? pglite.serializers[types[index]!];
            return serializer ? serializer(param) : String(param);
          });
          const messages = await pglite.execProtocolStream(
            Buffer.concat([serialize.bind({ statement: name, values }), serialize.describe({ type: 'P' }), serialize.execute({}), serialize.sync()]),
            { syncToFs: false, onNotice: options?.onNotice },
          );
          if (!inTransaction) await pglite.syncToFs();
          return parse.parseResults(messages, pglite.parsers, options)[0] as Results<T>;
        } catch (error) {
          // As PGlite's query reports it, without the parameters (they can hold secrets, and errors are logged).
          if (error instanceof Error) Object.assign(error, { query: text });
          throw error;
        }
      });
    return inTransaction ? work() : pglite._runExclusiveTransaction(work);
  }

  function nameFor(text: string, parameterCount: number): string | undefined {
    const name = statementName(text, parameterCount);
    if (name === undefined || prepared.has(name) || prepared.size < MAX_EMBEDDED_PREPARED_STATEMENTS) return name;
    return undefined;
  }

  /** The name to prepare a call's statement under, or undefined to leave the call to PGlite's own query. */
  function preparedName(text: string, params: unknown[] | undefined, options: QueryOptions | undefined): string | undefined {
    // Options that change how a statement is parsed or fed (parameter types, a blob for COPY) are PGlite's to handle.
    if (params === undefined || options?.paramTypes !== undefined || options?.blob !== undefined) return undefined;
    return nameFor(text, params.length);
  }

  const preparingTransaction = (tx: Transaction): Transaction =>
    new Proxy(tx, {
      get(target, property, receiver) {
        if (property !== 'query') return Reflect.get(target, property, receiver);
        return <T>(text: string, params?: unknown[], options?: QueryOptions): Promise<Results<T>> => {
          const name = target.closed ? undefined : preparedName(text, params, options);
          return name === undefined ? target.query<T>(text, params, options) : run<T>(name, text, params!, options, true);
        };
      },
    });

  return new Proxy(pglite, {
    get(target, property) {
      if (property === 'query') {
        return <T>(text: string, params?: unknown[], options?: QueryOptions): Promise<Results<T>> => {
          const name = preparedName(text, params, options);
          return name === undefined ? target.query<T>(text, params, options) : run<T>(name, text, params!, options, false);
        };
      }
      if (property === 'transaction') {
        return <T>(callback: (tx: Transaction) => Promise<T>): Promise<T> => target.transaction((tx) => callback(preparingTransaction(tx)));
      }
      // PGlite's methods use private fields: they must run on the instance itself, not on this proxy.
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

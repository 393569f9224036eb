import fc from 'fast-check';

/**
 * Generated malformed HTTP requests across every route of the API: valid requests first, then broken by one to three
 * mutations each: wrong types, missing and unknown fields, huge strings, odd unicode (NUL, lone surrogates, bidi
 * controls, byte-order marks), NaN-ish and out-of-range numbers, deep nesting, wrong content types, bad JSON text,
 * bad query strings, bad path ids, bad headers and wrong methods.
 */

export type HostileRequest = {
  /** What was done to it, for the report. */
  kind: string;
  method: string;
  url: string;
  headers: Record<string, string>;
  payload?: string;
};

/** The ids and a valid request of each kind, made against a live service before generating. */
export type Templates = {
  apiKey: string;
  customerId: string;
  unverifiedCustomerId: string;
  requestId: string;
  pushBody: Record<string, unknown>;
};

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Where a deep nesting goes in the JSON text: the mutation leaves this string, and the text is spliced in later. */
const DEEP = '\u0001DEEP\u0001';

const oddStrings = fc.constantFrom(
  '',
  ' ',
  '\t\n',
  '\u0000',
  'a\u0000b',
  '\ud800',
  'x\udfffy',
  '\u202eevil',
  '\ufeffbom',
  '\u200b',
  'e\u0301',
  '🇮🇳',
  '%00',
  '%',
  '../../etc/passwd',
  "'; drop table irms; --",
  '${jndi:ldap://x}',
  '<script>alert(1)</script>',
  'NaN',
  'Infinity',
  '-0',
  '1e309',
  '0x1F',
  'null',
  'true',
  '１２３',
  '٣٤',
  '__proto__',
  'constructor',
  'EBRCGW20250101000000000000000000',
  '00000000-0000-0000-0000-000000000000',
);

const hostileString: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: oddStrings },
  { weight: 3, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary-ascii', maxLength: 40 }) },
  { weight: 1, arbitrary: fc.integer({ min: 200, max: 300_000 }).map((n) => 'x'.repeat(n)) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 5_000 }).map((n) => '\u{1F600}'.repeat(n)) },
);

const hostileNumber: fc.Arbitrary<number> = fc.oneof(
  fc.constantFrom(-1, -0.01, 0, 0.001, 1.005, 0.1 + 0.2, 1e21, 1e308, -1e308, 5e-324, 2 ** 31, 2 ** 53, 2 ** 53 + 2, 2 ** 63, 1e16, 99999999999999.99, 1000, 999, 1e20),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer(),
  fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }).map(Number),
);

const hostileValue: fc.Arbitrary<Json> = fc.oneof(
  { weight: 4, arbitrary: hostileString },
  { weight: 3, arbitrary: hostileNumber },
  { weight: 1, arbitrary: fc.boolean() },
  { weight: 1, arbitrary: fc.constant(null) },
  { weight: 1, arbitrary: fc.constant(DEEP) },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<Json> },
  { weight: 1, arbitrary: fc.array(hostileString, { maxLength: 5 }) },
);

const unknownKey = fc.oneof(
  fc.constantFrom('declarationFlag', 'platformCustomerID', 'ebrcBulkGenDto', 'serialno', 'irmnumber', 'password', 'apiKey', '__proto__', 'constructor', 'prototype', 'toString', '$where', ''),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 20 }),
);

type Mutation =
  | { op: 'replace'; at: number; value: Json }
  | { op: 'delete'; at: number }
  | { op: 'add'; at: number; key: string; value: Json }
  | { op: 'wrap'; at: number };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ op: fc.constant('replace' as const), at: fc.nat(), value: hostileValue }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('delete' as const), at: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('add' as const), at: fc.nat(), key: unknownKey, value: hostileValue }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('wrap' as const), at: fc.nat() }) },
);

/** Every place in a JSON value: [parent, key] pairs (the root has no parent). */
function places(value: Json, into: [Json[] | { [key: string]: Json } | null, string | number][] = [[null, '']]): typeof into {
  if (Array.isArray(value)) value.forEach((item, index) => (into.push([value, index]), places(item, into)));
  else if (value !== null && typeof value === 'object') for (const key of Object.keys(value)) (into.push([value, key]), places(value[key]!, into));
  return into;
}

function mutate(original: Json, mutations: readonly Mutation[]): { value: Json; description: string } {
  let root: Json = structuredClone(original);
  const done: string[] = [];
  for (const change of mutations) {
    const all = places(root);
    const [parent, key] = all[change.at % all.length]!;
    const current: Json = parent === null ? root : (parent as Record<string | number, Json>)[key]!;
    const set = (value: Json): void => {
      if (parent === null) root = value;
      else (parent as Record<string | number, Json>)[key] = value;
    };
    switch (change.op) {
      case 'replace':
        set(change.value);
        done.push(`replace ${String(key) || 'root'}`);
        break;
      case 'delete':
        if (parent === null) set(null);
        else if (Array.isArray(parent)) parent.splice(key as number, 1);
        else delete parent[key as string];
        done.push(`delete ${String(key) || 'root'}`);
        break;
      case 'add':
        if (current !== null && typeof current === 'object' && !Array.isArray(current)) {
          Object.defineProperty(current, change.key, { value: change.value, enumerable: true, configurable: true, writable: true });
          done.push('add unknown field');
        } else {
          set([current, change.value]);
          done.push('add item');
        }
        break;
      case 'wrap':
        set(Array.isArray(current) ? { items: current } : [current]);
        done.push(`wrap ${String(key) || 'root'}`);
        break;
    }
  }
  return { value: root, description: done.join(', ') };
}

/** The JSON text of a mutated value, with the deep nesting spliced in and, now and then, the text itself broken. */
const jsonText = (value: Json) =>
  fc.tuple(
    fc.integer({ min: 1, max: 12_000 }),
    fc.oneof(
      { weight: 8, arbitrary: fc.constant<'as-is'>('as-is') },
      { weight: 1, arbitrary: fc.constantFrom('truncate', 'garbage', 'bom', 'huge-exponent', 'duplicate-key', 'proto', 'empty', 'nan', 'trailing-comma', 'single-quotes') },
    ),
    fc.nat(),
  ).map(([depth, breakage, at]) => {
    let text = JSON.stringify(value) ?? 'null';
    const deep = '['.repeat(depth) + ']'.repeat(depth);
    text = text.replaceAll(JSON.stringify(DEEP), deep);
    switch (breakage) {
      case 'truncate':
        text = text.slice(0, at % Math.max(1, text.length));
        break;
      case 'garbage':
        text = `${text.slice(0, at % (text.length + 1))}\u0007}{${text.slice(at % (text.length + 1))}`;
        break;
      case 'bom':
        text = `\ufeff${text}`;
        break;
      case 'huge-exponent':
        text = text.replace(/(?<=[:[,])\d+(\.\d+)?(?=[,}\]])/, '1e999');
        break;
      case 'duplicate-key':
        text = text.replace(/^\{/, '{"platformCustomerId":1,');
        break;
      case 'proto':
        text = text.replace(/^\{/, '{"__proto__":{"isAdmin":true},"constructor":{"prototype":{"x":1}},');
        break;
      case 'empty':
        text = '';
        break;
      case 'nan':
        text = text.replace(/(?<=[:[,])\d+(\.\d+)?(?=[,}\]])/, 'NaN');
        break;
      case 'trailing-comma':
        text = text.replace(/\}$/, ',}');
        break;
      case 'single-quotes':
        text = text.replaceAll('"', "'");
        break;
    }
    return { text, breakage: breakage === 'as-is' ? (text.includes('[[[[') ? `nested ${depth} deep` : '') : breakage };
  });

const contentType = fc.oneof(
  { weight: 12, arbitrary: fc.constant('application/json') },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/json; charset=latin1',
      'application/json; charset=utf-16',
      'application/jsonx',
      'APPLICATION/JSON',
      'application/problem+json',
      'application/xml',
      '*/*',
      'application/json, text/plain',
      'application/json; charset="\u0000"',
    ),
  },
);

const hostileHeaders = fc.record(
  {
    apiKey: fc.oneof(
      { weight: 12, arbitrary: fc.constant<string | null>('valid') },
      { weight: 1, arbitrary: fc.constantFrom<string | null>(null, '', 'ebrc_test_', 'ebrc_test_9xQ7wZg8kLmN2pQrStUvWxYzAbCdEf', 'Bearer x', 'x'.repeat(5_000)) },
      { weight: 1, arbitrary: fc.string({ unit: 'grapheme-ascii', maxLength: 60 }) },
    ),
    idempotencyKey: fc.oneof(
      { weight: 10, arbitrary: fc.constant<string | null>(null) },
      { weight: 1, arbitrary: fc.constantFrom('', ' ', 'x'.repeat(256), 'k\u0001', 'key-ä', 'fuzz-fixed-key') },
      { weight: 1, arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 40 }) },
    ),
    requestId: fc.oneof(
      { weight: 10, arbitrary: fc.constant<string | null>(null) },
      { weight: 1, arbitrary: fc.string({ unit: 'grapheme-ascii', maxLength: 200 }) },
    ),
  },
  { requiredKeys: ['apiKey', 'idempotencyKey', 'requestId'] },
);

/** Header values Node's HTTP layer takes (no control characters but tab, Latin-1 at most). */
function headerSafe(value: string): string {
  return value.replace(/[^\t\x20-\x7e\x80-\xff]/g, '?');
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** encodeURIComponent, except that a lone surrogate becomes its three bytes as if it were a character (not UTF-8). */
function encodeLoosely(s: string): string {
  return s
    .split(LONE_SURROGATE)
    .map(encodeURIComponent)
    .reduce((encoded, part, index) => {
      if (index === 0) return part;
      const unit = s.match(LONE_SURROGATE)![index - 1]!.charCodeAt(0);
      const bytes = [0xe0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3f), 0x80 | (unit & 0x3f)];
      return `${encoded}${bytes.map((byte) => `%${byte.toString(16).toUpperCase()}`).join('')}${part}`;
    }, '');
}

/** A query string from key/value pairs, sometimes raw (unencoded, or percent-encoding broken on purpose). */
function queryString(pairs: [string, string][], raw: boolean): string {
  if (pairs.length === 0) return '';
  const encode = raw ? (s: string) => s.replace(/[#\s]/g, '%20') : encodeLoosely;
  return `?${pairs.map(([k, v]) => `${encode(k)}=${encode(v)}`).join('&')}`;
}

const hostileQueryValue = fc.oneof(
  hostileString,
  hostileNumber.map(String),
  fc.constantFrom('-1', '0', '1.5', '1e400', '99999999999999999999', '9007199254740993', 'abc', '', '2025-02-30', '2025-13-01', '99999-01-01', '0000-00-00', '2025-1-1', 'PENDING ', 'pending', 'SUBMITTING', '%zz', '%', '%00', '%C0%AF'),
);

type QueryMutation = { op: 'replace' | 'delete' | 'add' | 'repeat'; at: number; key: string; value: string };

const queryMutation: fc.Arbitrary<QueryMutation> = fc.record({
  op: fc.constantFrom('replace', 'replace', 'replace', 'delete', 'add', 'repeat'),
  at: fc.nat(),
  key: unknownKey,
  value: hostileQueryValue,
});

function mutateQuery(original: [string, string][], mutations: readonly QueryMutation[]): { pairs: [string, string][]; description: string } {
  const pairs = original.map(([k, v]): [string, string] => [k, v]);
  const done: string[] = [];
  for (const change of mutations) {
    const index = pairs.length === 0 ? -1 : change.at % pairs.length;
    if (change.op === 'add' || index < 0) {
      pairs.push([change.key, change.value]);
      done.push('add param');
    } else if (change.op === 'replace') {
      pairs[index] = [pairs[index]![0], change.value];
      done.push(`replace ${pairs[index]![0]}`);
    } else if (change.op === 'delete') {
      done.push(`delete ${pairs[index]![0]}`);
      pairs.splice(index, 1);
    } else {
      pairs.push([pairs[index]![0], change.value]);
      done.push(`repeat ${pairs[index]![0]}`);
    }
  }
  return { pairs, description: done.join(', ') };
}

type Route = {
  name: string;
  method: string;
  path: (templates: Templates, id: string) => string;
  /** A valid query, as pairs. */
  query?: (templates: Templates) => [string, string][];
  /** A valid body. */
  body?: (templates: Templates) => Json;
  /** Whether the path takes an id. */
  id?: boolean;
  /** How often it is picked against the others' 4 (the operations endpoints take no input to break). */
  weight?: number;
};

const ROUTES: Route[] = [
  { name: 'create customer', method: 'POST', path: () => '/api/v1/platform-customers/', body: () => ({ name: 'Fuzz', email: 'fuzz@example.com', companyName: 'Fuzz Ltd', address: 'Here' }) },
  { name: 'list customers', method: 'GET', path: () => '/api/v1/platform-customers', query: () => [['page', '1'], ['limit', '10'], ['search', 'fuzz']] },
  { name: 'get customer', method: 'GET', id: true, path: (_t, id) => `/api/v1/platform-customers/${id}` },
  {
    name: 'check credentials',
    method: 'POST',
    id: true,
    path: (_t, id) => `/api/v1/platform-customers/${id}/check-authority-credentials`,
    body: () => ({ authorityUsername: 'demo.exporter', authorityPassword: 'Wrong#Fuzz-1' }),
  },
  {
    name: 'refresh IRMs',
    method: 'POST',
    path: () => '/api/v1/irm/refresh',
    query: (t) => [['platformCustomerId', t.customerId], ['page', '1'], ['limit', '5'], ['fromDate', '2024-01-01'], ['toDate', '2030-12-31']],
    body: () => ({}),
  },
  { name: 'push', method: 'POST', path: () => '/api/v1/genebrc/push-irm', body: (t) => t.pushBody as Json },
  { name: 'status', method: 'POST', path: () => '/api/v1/genebrc/status', body: (t) => ({ platformCustomerId: t.customerId, requestId: t.requestId }) },
  {
    name: 'list requests',
    method: 'GET',
    path: () => '/api/v1/genebrc',
    query: (t) => [['platformCustomerId', t.customerId], ['status', 'PENDING'], ['page', '1'], ['limit', '10'], ['fromDate', '2024-01-01'], ['toDate', '2030-12-31'], ['requestId', t.requestId]],
  },
  { name: 'health', method: 'GET', path: () => '/health', weight: 1 },
  { name: 'ready', method: 'GET', path: () => '/ready', weight: 1 },
];

const hostileId = fc.oneof(
  hostileString,
  fc.uuid(),
  fc.constantFrom('..', '.', '%2e%2e', '%2F', 'a%00b', '%00', 'x'.repeat(101), '%zz', '%E2%80%AE', ' ', '%20', '00000000-0000-0000-0000-000000000000'),
);

/** One hostile request for `templates`, of any route. */
export function hostileRequest(templates: Templates): fc.Arbitrary<HostileRequest> {
  return fc
    .record({
      route: fc.oneof(...ROUTES.map((route) => ({ weight: route.weight ?? 4, arbitrary: fc.constant(route) }))),
      method: fc.oneof({ weight: 12, arbitrary: fc.constant<string | null>(null) }, { weight: 1, arbitrary: fc.constantFrom('PUT', 'DELETE', 'PATCH', 'GET', 'POST', 'OPTIONS', 'HEAD') }),
      id: fc.oneof({ weight: 1, arbitrary: fc.constantFrom('verified', 'unverified') }, { weight: 6, arbitrary: hostileId }),
      rawId: fc.boolean(),
      bodyMutations: fc.array(mutation, { minLength: 1, maxLength: 3 }),
      queryMutations: fc.array(queryMutation, { minLength: 1, maxLength: 3 }),
      rawQuery: fc.boolean(),
      contentType,
      headers: hostileHeaders,
      bodyOnGet: fc.option(hostileString, { freq: 8 }),
    })
    .chain((choice) => {
      const body = choice.route.body?.(templates);
      const mutated = body === undefined ? undefined : mutate(body, choice.bodyMutations);
      return (mutated === undefined ? fc.constant(undefined) : jsonText(mutated.value)).map((text) => ({ choice, mutated, text }));
    })
    .map(({ choice, mutated, text }) => {
      const { route } = choice;
      const kind: string[] = [route.name];
      const id = choice.id === 'verified' ? templates.customerId : choice.id === 'unverified' ? templates.unverifiedCustomerId : choice.id;
      let path = route.path(templates, choice.rawId ? id.replace(/[/?#\s]/g, '_') : encodeLoosely(id));
      if (route.id && choice.id !== 'verified' && choice.id !== 'unverified') kind.push('bad id');
      if (route.query) {
        const query = mutateQuery(route.query(templates), choice.queryMutations);
        path += queryString(query.pairs, choice.rawQuery);
        if (query.description) kind.push(query.description);
      } else if (choice.rawQuery) {
        path += queryString(choice.queryMutations.map((m) => [m.key, m.value]), choice.rawQuery);
        kind.push('unexpected query');
      }
      const headers: Record<string, string> = {};
      const { apiKey, idempotencyKey, requestId } = choice.headers;
      if (apiKey !== null) headers['x-api-key'] = apiKey === 'valid' ? templates.apiKey : headerSafe(apiKey);
      if (apiKey !== 'valid') kind.push('bad key');
      if (idempotencyKey !== null) (headers['idempotency-key'] = headerSafe(idempotencyKey), kind.push('idempotency key'));
      if (requestId !== null) headers['x-request-id'] = headerSafe(requestId);
      let payload: string | undefined;
      if (text !== undefined) {
        payload = text.text;
        if (mutated?.description) kind.push(mutated.description);
        if (text.breakage) kind.push(text.breakage);
      } else if (choice.bodyOnGet !== null) {
        payload = choice.bodyOnGet;
        kind.push('body where none belongs');
      }
      if (payload !== undefined && choice.contentType !== '') headers['content-type'] = choice.contentType;
      if (choice.contentType !== 'application/json' && payload !== undefined) kind.push(`content-type ${JSON.stringify(choice.contentType)}`);
      const method = choice.method ?? route.method;
      if (choice.method !== null) kind.push(`method ${method}`);
      return { kind: kind.join('; '), method, url: path, headers, ...(payload !== undefined && method !== 'GET' && method !== 'HEAD' ? { payload } : {}) };
    });
}

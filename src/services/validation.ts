import { Ajv, type ErrorObject, type AnySchema } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { fullFormats } from 'ajv-formats/dist/formats.js';
import { AppError, MAX_LISTED_ERRORS, type FieldError } from '../errors.ts';

// ajv-formats is CommonJS; under Node's ESM loader its default export is the plugin itself.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

function makeAjv(coerceTypes: boolean, allErrors: boolean): Ajv {
  const ajv = new Ajv({
    allErrors,
    // The pass that finds every problem reads the schema around an unknown field, for its near-miss hint.
    verbose: allErrors,
    coerceTypes,
    useDefaults: true,
    removeAdditional: false,
    strict: false,
    // JSON text such as 1e999 parses to Infinity: neither a number nor an integer for any field.
    strictNumbers: true,
  });
  addFormats(ajv);
  // RFC 3339 allows the year 0000; PostgreSQL has no year 0 (1 BC comes before 1 AD) and refuses it. Such a date
  // would reach the database and fail there: it fails the format here, with the format's own message.
  for (const name of ['date', 'date-time'] as const) {
    const { validate, compare } = fullFormats[name] as { validate: (text: string) => boolean; compare: (a: string, b: string) => number | undefined };
    ajv.addFormat(name, { validate: (text: string) => !text.startsWith('0000') && validate(text), compare });
  }
  // A multipart body's file (OpenAPI's format: binary) reaches the validator as the text the route made of it.
  ajv.addFormat('binary', true);
  return ajv;
}

// Bodies are taken as sent (a string is never a number); query strings and path parameters are text by nature.
// Each is checked by a pass that stops at the first problem and, when there is one, a pass that finds them all.
const bodyAjv = { firstProblem: makeAjv(false, false), everyProblem: makeAjv(false, true) };
const textAjv = { firstProblem: makeAjv(true, false), everyProblem: makeAjv(true, true) };

type Validator = ((data: unknown) => boolean) & { errors?: ErrorObject[] | null };

/** Whether data passes the schema as the API checks it; stops at the first problem, which `errors` then holds. */
export function compileValidator(schema: AnySchema, httpPart: string | undefined): Validator {
  if (httpPart === 'body') return bodyAjv.firstProblem.compile(schema);
  const validate = textAjv.firstProblem.compile(schema);
  // Coercion turns text such as "1e400" into Infinity, and ajv then skips the number's range checks: refuse it here.
  const checked: Validator = (data) => {
    if (!validate(data)) {
      checked.errors = validate.errors ?? null;
      return false;
    }
    const infinite = Object.entries(data !== null && typeof data === 'object' ? data : {}).find(
      ([, value]) => typeof value === 'number' && !Number.isFinite(value),
    );
    const fieldSchema = infinite && (schema as { properties?: Record<string, { type?: unknown }> }).properties?.[infinite[0]];
    checked.errors = infinite
      ? [
          {
            instancePath: `/${infinite[0]}`,
            schemaPath: '#/type',
            keyword: 'type',
            params: { type: fieldSchema?.type ?? 'number' },
            message: 'must be a finite number',
            data: infinite[1],
            ...(fieldSchema ? { parentSchema: fieldSchema } : {}),
          },
        ]
      : null;
    return infinite === undefined;
  };
  return checked;
}

/**
 * The validator Fastify runs on each part of a request: true, or the 400 to answer. A valid request costs one pass
 * that stops at its first problem; an invalid one a second pass that finds every problem of a bounded copy of it, so
 * that the answer stays small and cheap to make whatever was sent.
 */
export function compileRequestValidator(schema: AnySchema, httpPart: string | undefined) {
  const part = httpPart ?? 'body';
  const accepts = compileValidator(schema, part);
  // Compiled on the first invalid request: most schemas never see one, and compiling every one twice slows the start.
  let findEvery: Validator | undefined;
  return (data: unknown): true | { error: AppError } => {
    if (accepts(data)) return true;
    findEvery ??= (part === 'body' ? bodyAjv : textAjv).everyProblem.compile(schema);
    const bounded = boundedForReport(schema, data);
    // Only an infinite number that coercion made (see compileValidator) passes the second pass.
    const problems = findEvery(bounded.data) ? (accepts.errors ?? []) : (findEvery.errors ?? []);
    return { error: validationFailure(problems, part, bounded.unknownFieldsLeftOut) };
  };
}

type SchemaNode = { properties?: Record<string, SchemaNode>; additionalProperties?: unknown; items?: SchemaNode; maxItems?: number };

/**
 * What the pass that finds every problem looks at: `data` with each array cut one item past its maxItems (that item
 * still shows the limit is broken), and only the first MAX_LISTED_ERRORS of the fields no schema knows; the others
 * are counted, each being one problem. Every problem of an ordinary request is found as before, and the work for a
 * hostile one (417,000 unknown fields, or 1.6 million empty lines in 5 MB) is bounded by the schema, not by the size
 * of the body: a thousand lines with every field wrong at worst.
 */
function boundedForReport(schema: unknown, data: unknown): { data: unknown; unknownFieldsLeftOut: number } {
  let unknownFieldsToKeep = MAX_LISTED_ERRORS;
  let unknownFieldsLeftOut = 0;
  const bound = (node: SchemaNode, value: unknown): unknown => {
    if (Array.isArray(value)) {
      const items = node.items;
      if (items === undefined) return value;
      return (node.maxItems === undefined ? value : value.slice(0, node.maxItems + 1)).map((item) => bound(items, item));
    }
    const properties = node.properties;
    if (value === null || typeof value !== 'object' || properties === undefined) return value;
    const fields = value as Record<string, unknown>;
    const kept: [string, unknown][] = [];
    for (const name of Object.keys(fields)) {
      if (Object.hasOwn(properties, name)) {
        kept.push([name, bound(properties[name]!, fields[name])]);
      } else if (node.additionalProperties !== false) {
        kept.push([name, fields[name]]);
      } else if (unknownFieldsToKeep > 0) {
        unknownFieldsToKeep--;
        kept.push([name, fields[name]]);
      } else {
        unknownFieldsLeftOut++;
      }
    }
    return Object.fromEntries(kept);
  };
  return { data: bound(schema as SchemaNode, data), unknownFieldsLeftOut };
}

function distance(a: string, b: string): number {
  const previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = previous[0]!;
    previous[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = previous[j]!;
      previous[j] = Math.min(above + 1, previous[j - 1]! + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return previous[b.length]!;
}

/** The known field a mistyped one most likely meant: same letters in another case, or two edits away at most. */
function nearMiss(unknown: string, known: readonly string[]): string | undefined {
  const lower = unknown.toLowerCase();
  let best: { name: string; score: number } | undefined;
  for (const name of known) {
    const score = name.toLowerCase() === lower ? 0 : distance(lower, name.toLowerCase());
    if (score <= Math.max(2, Math.floor(name.length / 5)) && (!best || score < best.score)) best = { name, score };
  }
  return best?.name;
}

function fieldName(pointer: string, part: string): string {
  const name = pointer.split('/').filter(Boolean).pop();
  if (!name) return part === 'body' ? 'The body' : 'The query';
  return part === 'querystring' ? `Query parameter ${name}` : /^\d+$/.test(name) ? `Item ${pointer}` : name;
}

const TYPE_WORDS: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  integer: 'a whole number',
  boolean: 'true or false',
  object: 'an object',
  array: 'an array',
  null: 'null',
};

function describeType(type: unknown): string {
  const types = Array.isArray(type) ? type : [type];
  return types.map((t) => TYPE_WORDS[String(t)] ?? String(t)).join(' or ');
}

/**
 * The 400 for ajv's errors: the contract's field problems with JSON pointer paths, one a field (the first ajv found is
 * the most basic: type before length before format), the first MAX_LISTED_ERRORS of them worded (a near-miss hint
 * costs an edit distance per known field) and the others only counted.
 */
function validationFailure(errors: readonly ErrorObject[], part: string, unknownFieldsLeftOut: number): AppError {
  const paths = new Set<string>();
  const listed: FieldError[] = [];
  for (const error of errors) {
    const path = problemPath(error);
    if (path === undefined || paths.has(path)) continue;
    paths.add(path);
    if (listed.length < MAX_LISTED_ERRORS) listed.push(toFieldError(error, path, part));
  }
  const count = paths.size + unknownFieldsLeftOut;
  const detail = count === 1 ? `The request has an invalid field: ${listed[0]!.message}` : `The request has ${count} invalid fields; see errors.`;
  return new AppError('validation_failed', detail, { errors: listed, errorCount: count });
}

/** The field an ajv error is about; none for a union, whose branches' own errors say what is wrong. */
function problemPath(error: ErrorObject): string | undefined {
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'required':
      return `${error.instancePath}/${String(params.missingProperty)}`;
    case 'additionalProperties':
      return `${error.instancePath}/${String(params.additionalProperty)}`;
    case 'anyOf':
    case 'oneOf':
      return undefined;
    default:
      return error.instancePath;
  }
}

function toFieldError(error: ErrorObject, path: string, part: string): FieldError {
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'required':
      return { path, code: 'required', message: `${fieldName(path, part)} is required.` };
    case 'additionalProperties': {
      const known = Object.keys((error.parentSchema as { properties?: object } | undefined)?.properties ?? {});
      const hint = nearMiss(String(params.additionalProperty), known);
      return {
        path,
        code: 'unknown_field',
        message: `${fieldName(path, part)} is not a known field${hint ? `; did you mean ${hint}?` : '.'}`,
      };
    }
    case 'type':
      if (typeof error.data === 'number' && !Number.isFinite(error.data)) return outOfRange(error, path, part);
      return { path, code: 'invalid_type', message: `${fieldName(path, part)} must be ${describeType(params.type)}.` };
    case 'format':
      return { path, code: 'invalid_format', message: `${fieldName(path, part)} must be ${describeFormat(String(params.format))}.` };
    case 'pattern':
      return { path, code: 'invalid_format', message: `${fieldName(path, part)} is not in the expected format.` };
    case 'minLength':
    case 'maxLength':
      return {
        path,
        code: 'invalid_length',
        message: `${fieldName(path, part)} must be ${error.keyword === 'minLength' ? 'at least' : 'at most'} ${String(params.limit)} characters long.`,
      };
    case 'minItems':
    case 'maxItems':
      return {
        path,
        code: 'invalid_length',
        message: `${fieldName(path, part)} must have ${error.keyword === 'minItems' ? 'at least' : 'at most'} ${String(params.limit)} items.`,
      };
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
      return { path, code: 'out_of_range', message: `${fieldName(path, part)} must be ${String(params.comparison)} ${String(params.limit)}.` };
    case 'enum':
    case 'const': {
      const allowed = (params.allowedValues as unknown[] | undefined) ?? [params.allowedValue];
      return { path, code: 'invalid_value', message: `${fieldName(path, part)} must be one of: ${allowed.map(String).join(', ')}.` };
    }
    default:
      return { path, code: 'invalid_value', message: `${fieldName(path, part)} ${error.message ?? 'is not valid'}.` };
  }
}

/** The formats the schemas use, each worded with the form it expects. */
const FORMAT_WORDS: Record<string, string> = {
  date: 'a date as YYYY-MM-DD (for example 2025-09-15)',
  'date-time': 'a date and time as YYYY-MM-DDTHH:MM:SSZ (RFC 3339, for example 2025-09-15T10:30:00Z)',
  uuid: 'an id (a UUID such as 0f8fad5b-d9cb-469f-a165-70867728950e)',
  email: 'an email address (name@example.com)',
  uri: 'an absolute URL (https://…)',
};

function describeFormat(format: string): string {
  return FORMAT_WORDS[format] ?? `a valid ${format}`;
}

/**
 * A number too large for a double (1e999 and the like) reads as infinity: it was a number as sent, so "must be a
 * number" would mislead. The answer says it is out of range, and for an amount (every field of JSON type number,
 * not integer, in a request is one), the form an amount takes; for a whole number, its limits.
 */
function outOfRange(error: ErrorObject, path: string, part: string): FieldError {
  const schema = (error.parentSchema ?? {}) as { description?: unknown; minimum?: unknown; maximum?: unknown };
  const range =
    typeof schema.minimum === 'number' && typeof schema.maximum === 'number'
      ? `from ${schema.minimum} to ${schema.maximum}`
      : typeof schema.maximum === 'number'
        ? `up to ${schema.maximum}`
        : typeof schema.minimum === 'number'
          ? `of at least ${schema.minimum}, and finite`
          : 'within its range';
  const type = (error.params as { type?: unknown }).type;
  const expected = (Array.isArray(type) ? type : [type]).includes('number')
    ? 'an amount is a JSON number, never negative, with at most two decimals, within number(16,2): up to 99999999999999.99'
    : `it must be ${describeType(type)} ${range}`;
  const infinity = (error.data as number) > 0 ? 'infinity' : '-infinity';
  return {
    path,
    code: 'out_of_range',
    message: `${fieldName(path, part)} is out of range: the number sent is too large to read (it reads as ${infinity}); ${expected}.`,
  };
}

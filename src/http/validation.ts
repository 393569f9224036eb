import { Ajv, type ErrorObject, type AnySchema } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FieldError } from '../errors.ts';

// ajv-formats is CommonJS; under Node's ESM loader its default export is the plugin itself.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

function makeAjv(coerceTypes: boolean): Ajv {
  const ajv = new Ajv({
    allErrors: true,
    verbose: true,
    coerceTypes,
    useDefaults: true,
    removeAdditional: false,
    strict: false,
    // JSON text such as 1e999 parses to Infinity: neither a number nor an integer for any field.
    strictNumbers: true,
  });
  addFormats(ajv);
  return ajv;
}

// Bodies are taken as sent (a string is never a number); query strings and path parameters are text by nature.
const bodyAjv = makeAjv(false);
const textAjv = makeAjv(true);

type Validator = ((data: unknown) => boolean) & { errors?: ErrorObject[] | null };

export function compileValidator(schema: AnySchema, httpPart: string | undefined): Validator {
  if (httpPart === 'body') return bodyAjv.compile(schema);
  const validate = textAjv.compile(schema);
  // Coercion turns text such as "1e400" into Infinity, and ajv then skips the number's range checks: refuse it here.
  const checked: Validator = (data) => {
    if (!validate(data)) {
      checked.errors = validate.errors ?? null;
      return false;
    }
    const infinite = Object.entries(data !== null && typeof data === 'object' ? data : {}).find(
      ([, value]) => typeof value === 'number' && !Number.isFinite(value),
    );
    checked.errors = infinite
      ? [{ instancePath: `/${infinite[0]}`, schemaPath: '#/type', keyword: 'type', params: { type: 'number' }, message: 'must be a finite number' }]
      : null;
    return infinite === undefined;
  };
  return checked;
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
export function nearMiss(unknown: string, known: readonly string[]): string | undefined {
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

/** Turns ajv's errors into the contract's field problems, with JSON pointer paths. */
export function toFieldErrors(errors: readonly ErrorObject[], part: string): FieldError[] {
  const seen = new Set<string>();
  const result: FieldError[] = [];
  for (const error of errors) {
    const mapped = toFieldError(error, part);
    if (!mapped) continue;
    // One problem a field: the first ajv found is the most basic (type before length before format).
    if (seen.has(mapped.path)) continue;
    seen.add(mapped.path);
    result.push(mapped);
  }
  return result;
}

function toFieldError(error: ErrorObject, part: string): FieldError | undefined {
  const params = error.params as Record<string, unknown>;
  const at = error.instancePath;
  switch (error.keyword) {
    case 'required': {
      const path = `${at}/${String(params.missingProperty)}`;
      return { path, code: 'required', message: `${fieldName(path, part)} is required.` };
    }
    case 'additionalProperties': {
      const name = String(params.additionalProperty);
      const path = `${at}/${name}`;
      const known = Object.keys((error.parentSchema as { properties?: object } | undefined)?.properties ?? {});
      const hint = nearMiss(name, known);
      return {
        path,
        code: 'unknown_field',
        message: `${fieldName(path, part)} is not a known field${hint ? `; did you mean ${hint}?` : '.'}`,
      };
    }
    case 'type':
      return { path: at, code: 'invalid_type', message: `${fieldName(at, part)} must be ${describeType(params.type)}.` };
    case 'format':
      return { path: at, code: 'invalid_format', message: `${fieldName(at, part)} must be a valid ${String(params.format)}.` };
    case 'pattern':
      return { path: at, code: 'invalid_format', message: `${fieldName(at, part)} is not in the expected format.` };
    case 'minLength':
    case 'maxLength':
      return {
        path: at,
        code: 'invalid_length',
        message: `${fieldName(at, part)} must be ${error.keyword === 'minLength' ? 'at least' : 'at most'} ${String(params.limit)} characters long.`,
      };
    case 'minItems':
    case 'maxItems':
      return {
        path: at,
        code: 'invalid_length',
        message: `${fieldName(at, part)} must have ${error.keyword === 'minItems' ? 'at least' : 'at most'} ${String(params.limit)} items.`,
      };
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
      return { path: at, code: 'out_of_range', message: `${fieldName(at, part)} must be ${String(params.comparison)} ${String(params.limit)}.` };
    case 'enum':
    case 'const': {
      const allowed = (params.allowedValues as unknown[] | undefined) ?? [params.allowedValue];
      return { path: at, code: 'invalid_value', message: `${fieldName(at, part)} must be one of: ${allowed.map(String).join(', ')}.` };
    }
    case 'anyOf':
    case 'oneOf':
      // The branches' own errors say what is wrong.
      return undefined;
    default:
      return { path: at, code: 'invalid_value', message: `${fieldName(at, part)} ${error.message ?? 'is not valid'}.` };
  }
}

function isUnstorable(text: string): boolean {
  return text.includes('\u0000') || !text.isWellFormed();
}

/**
 * Whether `value` holds any text that unstorableText would report: the cheap check every request runs, building no
 * paths. Iterative, like unstorableText: a body may nest thousands of levels deep.
 */
export function hasUnstorableText(value: unknown): boolean {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const current = pending.pop();
    if (typeof current === 'string') {
      if (isUnstorable(current)) return true;
    } else if (current !== null && typeof current === 'object') {
      for (const key in current) pending.push((current as Record<string, unknown>)[key]);
    }
  }
  return false;
}

/**
 * Text the database cannot keep as it was sent: a NUL character (PostgreSQL text and jsonb refuse it), or an unpaired
 * surrogate (not Unicode; it would be stored as U+FFFD, another text than the one sent). Returns a field problem for
 * each such string in a parsed body, query or path (at most `limit`), with its JSON pointer under `base`.
 */
export function unstorableText(value: unknown, base = '', limit = 10): FieldError[] {
  const found: FieldError[] = [];
  const pending: [unknown, string][] = [[value, base]];
  while (pending.length > 0 && found.length < limit) {
    const [current, path] = pending.pop()!;
    if (typeof current === 'string') {
      if (isUnstorable(current)) {
        found.push({
          path,
          code: 'invalid_character',
          message: `${path.split('/').pop() || 'The text'} must not contain the NUL character or an unpaired surrogate.`,
        });
      }
    } else if (current !== null && typeof current === 'object') {
      for (const [key, item] of Object.entries(current)) pending.push([item, `${path}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`]);
    }
  }
  return found.sort((a, b) => (a.path < b.path ? -1 : 1));
}

import type { TSchema } from 'typebox';
import { AuthorityError } from '../../authority/authority.ts';
import { AppError, authorityProblem, ERROR_TABLE } from '../../errors.ts';
import { compileRequestValidator } from '../../services/validation.ts';

/**
 * Forms: what a page reads from a submitted form or a query string, checked by the API's own schemas (the same
 * validator and the same field problems as the JSON API), and every failure of a service turned into what a page
 * shows: a status, a title, a sentence, and a message per field.
 */

/** The fields of a urlencoded body or a query string: a name given once is text, given again a list. */
export type FormFields = Record<string, string | string[] | undefined>;

export function formFields(body: unknown): FormFields {
  return body !== null && typeof body === 'object' ? (body as FormFields) : {};
}

/** The field's text (its first value when it came more than once), trimmed unless `raw`; '' when absent. */
export function text(fields: FormFields, name: string, options: { raw?: boolean } = {}): string {
  const value = fields[name];
  const first = Array.isArray(value) ? (value[0] ?? '') : (value ?? '');
  return options.raw ? first : first.trim();
}

/** Every value of a field that may come more than once (check boxes). */
export function list(fields: FormFields, name: string): string[] {
  const value = fields[name];
  return value === undefined ? [] : Array.isArray(value) ? value : [value];
}

/** The field's text, or undefined when it is blank: for optional fields and filters. */
export function optional(fields: FormFields, name: string): string | undefined {
  const value = text(fields, name);
  return value === '' ? undefined : value;
}

type Check = ReturnType<typeof compileRequestValidator>;
const bodyChecks = new WeakMap<TSchema, Check>();
const queryChecks = new WeakMap<TSchema, Check>();

/**
 * `value` checked against one of the API's schemas, as the API checks a body (`body`) or a query string (`query`:
 * text coerced to numbers, defaults applied); a 400 AppError with the fields at fault otherwise.
 */
export function validated<T>(schema: TSchema, value: Record<string, unknown>, part: 'body' | 'query' = 'body'): T {
  const checks = part === 'body' ? bodyChecks : queryChecks;
  let check = checks.get(schema);
  if (check === undefined) {
    check = compileRequestValidator(schema, part === 'body' ? 'body' : 'querystring');
    checks.set(schema, check);
  }
  const copy = { ...value };
  const outcome = check(copy);
  if (outcome !== true) throw outcome.error;
  return copy as T;
}

/** What a page shows of a failure: its HTTP status, the error table's title, a sentence, and messages by field. */
export type Problem = { status: number; code: string; title: string; detail: string; fields: Record<string, string> };

/**
 * A failure as a page shows it, from the same tables as the API's problem documents; null when it is not one a user
 * can act on (a bug: the error handler's 500 page). `labels` name the form's fields for people (API name → label).
 */
export function problemOf(error: unknown, labels: Record<string, string> = {}): Problem | null {
  if (error instanceof AppError) {
    const fields: Record<string, string> = {};
    for (const field of error.errors ?? []) {
      const name = field.path.split('/')[1] ?? '';
      if (name === '' || fields[name] !== undefined) continue;
      const label = labels[name];
      fields[name] = label === undefined ? field.message : field.message.replace(new RegExp(`^${escapeRegExp(name)}\\b`), label);
    }
    const shown = Object.keys(fields).length;
    const detail = error.code === 'validation_failed' && shown > 0
      ? shown === 1
        ? 'A field needs a change: see the message beside it.'
        : `${shown} fields need a change: see the messages beside them.`
      : error.message;
    const { status, title } = ERROR_TABLE[error.code];
    return { status, code: error.code, title, detail, fields };
  }
  if (error instanceof AuthorityError) {
    const problem = authorityProblem(error);
    const { status, title } = ERROR_TABLE[problem.code];
    return { status, code: problem.code, title, detail: problem.detail, fields: {} };
  }
  return null;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

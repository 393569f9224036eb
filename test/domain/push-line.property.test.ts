import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { lineToWire, normaliseLines, type RawLine } from '../../src/domain/push-line.ts';
import type { UploadTypeCode } from '../../src/domain/upload-type.ts';
import { PushLineSchema } from '../../src/schemas/genebrc-requests.ts';
import { compileValidator } from '../../src/services/validation.ts';
import { scaled } from '../support/reliability.ts';

/**
 * Line validation for any line the schema lets through (fast-check): normaliseLines never throws, reports each problem
 * at a field the line has, accepts all or nothing, and what it accepts is stable when sent again as the wire shape.
 */

const runs = { numRuns: scaled(1_000, 20_000) };
const UPLOAD_TYPE_CODES: UploadTypeCode[] = ['101', '102', '103', '104'];

/** A line that passes every check, the start of each generated one. */
const VALID: Record<string, unknown> = {
  serialNo: 1,
  uploadType: 101,
  branchSlNo: 0,
  irmIfscCode: 'HDFC0000240',
  irmAdCode: '0510002',
  irmNumber: 'HDFCIR0599000000001',
  irmDt: '15092025',
  irmFCC: 'USD',
  irmPurposeCode: 'P0103',
  irmRemitAmtFCC: 1500.25,
  sbCumInvoiceNumber: '1234567',
  sbCumInvoiceDate: '2025-09-15',
  portCode: 'INNSA1',
  billNo: 'INV-001',
  sbCumInvoiceFCC: 'USD',
  sbCumInvoiceValueinFCC: 100.25,
  mappedIRMAmountFCC: 100.25,
  isVostro: 'N',
  commissionValDeduct: 1.5,
  gstinInvoiceDate: '01012025',
  serviceTypeModesValue: 1,
};

type FieldSchema = { type?: string | string[]; anyOf?: FieldSchema[]; maxLength?: number; minLength?: number };

const text = (schema: FieldSchema) =>
  fc.oneof(
    fc.string({ unit: 'binary', minLength: schema.minLength ?? 0, maxLength: Math.min(schema.maxLength ?? 60, 60) }),
    fc.string({ unit: 'grapheme-ascii', minLength: schema.minLength ?? 0, maxLength: Math.min(schema.maxLength ?? 60, 60) }),
    fc.constantFrom('15092025', '2025-09-15', '29022024', '29022025', '31042025', 'USD', 'usd', 'P0103', 'P01', 'INNSA1', 'HDFC0000240', '1234567', '12345678', 'Y', 'N', ''),
  ).filter((s) => s.length >= (schema.minLength ?? 0) && s.length <= (schema.maxLength ?? Infinity));

const amount = fc.oneof(
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer({ min: 0, max: 10_000_000 }).map((cents) => cents / 100),
  fc.constantFrom(0, -0, 0.1, 1.005, 0.001, 99999999999999.99, 1e16, -1),
);

/** A value of the field's JSON type, as the schema says it (so that the line passes the shape). */
function valueOf(schema: FieldSchema): fc.Arbitrary<unknown> {
  if (schema.anyOf) return fc.oneof(...schema.anyOf.map(valueOf));
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  return fc.oneof(
    ...types.map((type): fc.Arbitrary<unknown> => {
      switch (type) {
        case 'null':
          return fc.constant(null);
        case 'integer':
          return fc.oneof(fc.integer({ min: -5, max: 1_100 }), fc.integer(), fc.constantFrom(101, 102, 103, 104));
        case 'number':
          return amount;
        case 'string':
          return text(schema);
        default:
          throw new Error(`no generator for ${String(type)}`);
      }
    }),
  );
}

const properties = PushLineSchema.properties as unknown as Record<string, FieldSchema>;
const required = new Set<string>((PushLineSchema as unknown as { required: string[] }).required);
const fitsTheShape = compileValidator(PushLineSchema as never, 'body');

/**
 * A line that passes the schema: each field kept valid (`keep` times in `keep + 1`), changed to any value of its type,
 * or (optional ones) left out.
 */
const lineOf = (keep: number) => fc
  .record(
    Object.fromEntries(
      Object.entries(properties).map(([field, schema]) => [
        field,
        fc.oneof(
          { weight: keep, arbitrary: fc.constant(VALID[field]) },
          { weight: 1, arbitrary: valueOf(schema) },
          { weight: required.has(field) ? 0 : 1, arbitrary: fc.constant(undefined) },
        ),
      ]),
    ),
  )
  .map((fields) => Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)))
  .filter((raw) => fitsTheShape(raw));
const line = lineOf(3);
/** Mostly valid lines: one or two fields changed. */
const nearlyValidLine = lineOf(30);

describe('normaliseLines, by property', () => {
  test('never throws on a line of the right shape; each problem names one field the line has, once', () => {
    fc.assert(
      fc.property(fc.array(line, { minLength: 1, maxLength: 4 }), fc.constantFrom(...UPLOAD_TYPE_CODES), (lines, uploadType) => {
        const result = normaliseLines(lines as RawLine[], uploadType);
        assert.ok(result.lines.length === 0 || result.problems.length === 0, 'all lines or none');
        if (result.problems.length === 0) assert.equal(result.lines.length, lines.length);
        const paths = result.problems.map((problem) => problem.path);
        assert.equal(new Set(paths).size, paths.length, 'one problem per field');
        for (const problem of result.problems) {
          const match = /^\/ebrcBulkGenDtos\/(\d+)\/([A-Za-z0-9]+)$/.exec(problem.path);
          assert.ok(match, problem.path);
          const raw = lines[Number(match[1])] as Record<string, unknown> | undefined;
          assert.ok(raw !== undefined, `${problem.path}: no such line`);
          assert.ok(match[2]! in raw && raw[match[2]!] !== null, `${problem.path}: the line has no such field`);
          assert.match(problem.code, /^(ERR\d{2}|[a-z_]+)$/);
          assert.ok(problem.message.startsWith(match[2]!), problem.message);
        }
      }),
      runs,
    );
  });

  test('an accepted line, sent again in the wire shape, is read as the same line', () => {
    fc.assert(
      fc.property(nearlyValidLine, fc.constantFrom(...UPLOAD_TYPE_CODES), (raw, uploadType) => {
        const first = normaliseLines([{ ...raw, uploadType: Number(uploadType) } as RawLine], uploadType);
        fc.pre(first.problems.length === 0);
        const wire = lineToWire(first.lines[0]!);
        assert.ok(fitsTheShape(wire), 'the wire shape passes the schema');
        const again = normaliseLines([wire as RawLine], uploadType);
        assert.deepEqual(again.problems, []);
        assert.deepEqual(again.lines[0], first.lines[0]);
      }),
      runs,
    );
  });
});

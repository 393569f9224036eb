import { createHash, randomUUID } from 'node:crypto';
import { auditSourceOf } from '../../audit-source.ts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { isMappableIrm } from '../../../domain/irm-status.ts';
import { formatCents, parseMoney } from '../../../domain/money.ts';
import type { RawLine } from '../../../domain/push-line.ts';
import type { ErrorDetail } from '../../../domain/push-rules.ts';
import { AppError } from '../../../errors.ts';
import { requireVerified } from '../../../services/context.ts';
import { listCustomers, requireCustomer } from '../../../services/customers.ts';
import { toCustomer, type Customer } from '../../../services/customer-view.ts';
import type { PushBody } from '../../../services/genebrc/push.ts';
import { storedAcknowledgement } from '../../../services/genebrc/views.ts';
import { matchIrms } from '../../../services/irm-matching.ts';
import { refreshIrms, type IrmRecord } from '../../../services/irms.ts';
import { claimKey, completeKey, linkResource, releaseKey } from '../../../store/idempotency.ts';
import type { Api, Deps } from '../../deps.ts';
import { PushBodySchema } from '../../../schemas/genebrc-requests.ts';
import { formFields, list, text, validated, type FormFields, type Problem } from '../forms.ts';
import type { ConsolePage } from '../page.ts';
import { failureOf, platformOf, render } from '../render.ts';

/**
 * The generation wizard (contract 10): a verified customer, its IRMs with a balance, one line per invoice, a review
 * that runs the push's own checks without sending anything, then the push itself (PushService.push, as the API's) and
 * the request's page. Every step is a plain form POST; what was chosen so far travels in a hidden field (`state`, JSON)
 * and is checked again at every step (the customer still the platform's and verified, the IRMs still its own).
 */

const GENERATE = '/console/generate';
/** The customers the picker offers: the newest ones (as the requests page). */
const PICKER_SIZE = 100;
const IRM_PAGE_SIZE = 20;
/** At most this many IRMs in one wizard (each is read again at every step). */
const MAX_IRMS = 50;
const MAX_LINES = 100;

const UPLOAD_TYPES = [
  { value: '101', label: '101 · Goods (direct export)' },
  { value: '102', label: '102 · Software (SOFTEX)' },
  { value: '103', label: '103 · Services' },
  { value: '104', label: '104 · Deemed export' },
];

const TEXT_FIELDS = ['irmNumber', 'invoiceNumber', 'invoiceDate', 'portCode', 'billNo', 'invoiceCurrency'] as const;
const AMOUNT_FIELDS = ['invoiceValue', 'mappedAmount'] as const;
/** The deductions of a push line (their *ValDeduct fields), optional. */
const DEDUCTIONS = [
  { name: 'commission', label: 'Commission', wire: 'commissionValDeduct' },
  { name: 'discount', label: 'Discount', wire: 'discountValDeduct' },
  { name: 'insurance', label: 'Insurance', wire: 'insuranceValDeduct' },
  { name: 'freight', label: 'Freight', wire: 'freightValDeduct' },
  { name: 'other', label: 'Other deductions', wire: 'otherDeductionDeduct' },
] as const;
const LINE_FIELDS = [...TEXT_FIELDS, ...AMOUNT_FIELDS, ...DEDUCTIONS.map((deduction) => deduction.name)] as const;
type LineField = (typeof LINE_FIELDS)[number];
type WizardLine = Record<LineField, string>;

/** Which wizard field each push line field comes from (to show the push's problems on the line). */
const WIRE_FIELDS: Record<string, string> = {
  irmNumber: 'IRM',
  irmDt: 'IRM',
  irmIfscCode: 'IRM',
  irmFCC: 'IRM',
  irmPurposeCode: 'IRM',
  irmRemitAmtFCC: 'IRM',
  sbCumInvoiceNumber: 'Invoice number',
  sbCumInvoiceDate: 'Invoice date',
  portCode: 'Port code',
  billNo: 'Bill no',
  sbCumInvoiceFCC: 'Invoice currency',
  sbCumInvoiceValueinFCC: 'Invoice value',
  mappedIRMAmountFCC: 'Mapped amount',
};

const LineState = Type.Object(Object.fromEntries(LINE_FIELDS.map((field) => [field, Type.String({ maxLength: 100 })])), { additionalProperties: false });
const WizardStateSchema = Type.Object(
  {
    customerId: Type.String({ minLength: 1, maxLength: 100 }),
    uploadType: Type.Union(UPLOAD_TYPES.map((type) => Type.Literal(type.value))),
    irms: Type.Array(Type.String({ minLength: 1, maxLength: 50 }), { maxItems: MAX_IRMS }),
    lines: Type.Array(LineState, { maxItems: MAX_LINES }),
  },
  { additionalProperties: false },
);
const PUSH_KEY = /^console-push-[0-9a-f-]{36}$/;

type WizardState = { customerId: string; uploadType: string; irms: string[]; lines: WizardLine[] };

const blankLine = (irmNumber = ''): WizardLine =>
  Object.fromEntries(LINE_FIELDS.map((field) => [field, field === 'irmNumber' ? irmNumber : ''])) as WizardLine;

/** The wizard's state from its hidden field, checked as a body is: a 400 page when it is not the wizard's own. */
function stateOf(fields: FormFields): WizardState {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text(fields, 'state', { raw: true }));
  } catch {
    parsed = null;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    const message = 'The wizard’s state is missing or damaged: start again from the first step.';
    throw new AppError('validation_failed', message, { errors: [] });
  }
  return validated<WizardState>(WizardStateSchema, parsed as Record<string, unknown>);
}

/** The customer of the state, still the platform's and still verified (else the 404 or 409 page). */
async function customerOf(deps: Deps, platformId: string, customerId: string): Promise<Customer> {
  const row = await requireCustomer(deps.database.db, platformId, customerId);
  requireVerified(row);
  return toCustomer(row);
}

/** The IRMs the state names, as stored now (the same IRM list service as the API's), by number. */
async function storedIrms(deps: Deps, platformId: string, customerId: string, numbers: readonly string[]): Promise<Map<string, IrmRecord>> {
  const found = new Map<string, IrmRecord>();
  for (const irmNumber of new Set(numbers)) {
    const page = await refreshIrms(deps.context, deps.irmPuller, platformId, customerId, { page: 1, limit: 1, irmNumber }, null);
    const irm = page.data[0];
    if (irm !== undefined) found.set(irm.irmNumber, irm);
  }
  return found;
}

function mappable(irm: IrmRecord): boolean {
  return isMappableIrm({
    cancelled: String(irm.irmStatus) === 'cancelled',
    availableCents: parseMoney(irm.irmAvailableAmt) ?? 0n,
    purposeOfRemittance: irm.purposeOfRemittance,
  });
}

/** An amount typed in a form: "1250", "1250.5", "1,250.50" → the decimal text with two decimals, or null. */
function amountText(typed: string): string | null {
  const plain = typed.replaceAll(',', '').trim();
  if (!/^\d{1,14}(\.\d{1,2})?$/.test(plain)) return null;
  const [whole = '0', fraction = ''] = plain.split('.');
  return `${BigInt(whole)}.${fraction.padEnd(2, '0')}`;
}

/** The JSON number of a checked amount text: the double nearest to it, which the push reads back exactly. */
function amountNumber(decimal: string): number {
  return Number(decimal);
}

/** The lines as typed on the lines step, with a message per field that is blank or not an amount. */
function linesOf(fields: FormFields): WizardLine[] {
  const count = Math.min(Number.parseInt(text(fields, 'lineCount'), 10) || 0, MAX_LINES);
  const lines: WizardLine[] = [];
  for (let index = 0; index < count; index++) {
    const line = blankLine();
    for (const field of LINE_FIELDS) line[field] = text(fields, `${field}_${index}`).slice(0, 100);
    lines.push(line);
  }
  return lines;
}

type LineProblems = Record<string, string>[];

const REQUIRED: Partial<Record<LineField, string>> = {
  invoiceNumber: 'Enter the invoice (shipping bill) number.',
  invoiceDate: 'Enter the invoice date.',
  portCode: 'Enter the port code, six characters such as INDEL4.',
  billNo: 'Enter the bill number.',
  invoiceValue: 'Enter the invoice value.',
};

/** What must change on the lines before they can be reviewed (blank or malformed fields); `forMatching` needs no IRM or mapped amount. */
function formProblems(lines: readonly WizardLine[], irms: ReadonlySet<string>): LineProblems {
  return lines.map((line) => {
    const problems: Record<string, string> = {};
    for (const [field, message] of Object.entries(REQUIRED)) if (line[field as LineField] === '') problems[field] = message;
    if (line.irmNumber === '') problems.irmNumber = 'Choose the IRM that pays this invoice, or use “Suggest from matching”.';
    else if (!irms.has(line.irmNumber)) problems.irmNumber = 'Choose one of the IRMs picked in step 2.';
    if (line.mappedAmount === '') problems.mappedAmount = 'Enter the amount of the IRM mapped to this invoice.';
    for (const field of [...AMOUNT_FIELDS, ...DEDUCTIONS.map((deduction) => deduction.name)]) {
      if (line[field] !== '' && amountText(line[field]) === null) problems[field] = 'Enter an amount such as 1250.50: digits, at most two decimals.';
    }
    if (line.invoiceCurrency !== '' && !/^[A-Z]{3}$/.test(line.invoiceCurrency)) problems.invoiceCurrency = 'A currency is three capital letters, such as USD.';
    return problems;
  });
}

const hasProblems = (problems: LineProblems) => problems.some((line) => Object.keys(line).length > 0);

/** The push body of the state's lines: the IRM side as stored now, the invoice side as typed. */
function pushBodyOf(state: WizardState, irms: ReadonlyMap<string, IrmRecord>): PushBody {
  const lines = state.lines.map((line, index): RawLine => {
    const irm = irms.get(line.irmNumber);
    const raw: RawLine = {
      serialNo: index + 1,
      uploadType: state.uploadType,
      branchSlNo: 0,
      irmIfscCode: irm?.ifscCode ?? '',
      irmAdCode: irm?.remittanceAdCode ?? '',
      irmNumber: line.irmNumber,
      irmDt: irm?.irmIssueDate ?? '',
      irmFCC: irm?.remittanceFCC ?? '',
      irmPurposeCode: irm?.purposeOfRemittance ?? '',
      irmRemitAmtFCC: irm?.irmAvailableAmt ?? 0,
      sbCumInvoiceNumber: line.invoiceNumber,
      sbCumInvoiceDate: line.invoiceDate,
      portCode: line.portCode.toUpperCase(),
      billNo: line.billNo,
      sbCumInvoiceFCC: line.invoiceCurrency === '' ? (irm?.remittanceFCC ?? '') : line.invoiceCurrency,
      sbCumInvoiceValueinFCC: amountNumber(amountText(line.invoiceValue) ?? '0'),
      mappedIRMAmountFCC: amountNumber(amountText(line.mappedAmount) ?? '0'),
    };
    for (const deduction of DEDUCTIONS) {
      const amount = amountText(line[deduction.name]);
      if (amount !== null) raw[deduction.wire] = amountNumber(amount);
    }
    return raw;
  });
  return { platformCustomerId: state.customerId, recordResCount: lines.length, uploadType: state.uploadType, decalarationFlag: 'Y', ebrcBulkGenDtos: lines };
}

/**
 * The push's own checks, sent nowhere: its 400 checks (the schema, then normaliseLines in PushService.check) and its
 * rules against the IRMs as stored (checkPushRules). Every problem on its line (serialNo) or on the push (null).
 */
async function reviewOf(deps: Deps, platformId: string, body: PushBody): Promise<ErrorDetail[]> {
  try {
    validated(PushBodySchema, body as unknown as Record<string, unknown>);
    return await deps.push.check(platformId, body);
  } catch (error) {
    if (!(error instanceof AppError) || error.code !== 'validation_failed') throw error;
    return (error.errors ?? []).map((problem) => {
      const match = /^\/ebrcBulkGenDtos\/(\d+)(?:\/(\w+))?/.exec(problem.path);
      const field = match?.[2] ?? null;
      return { serialNo: match ? Number(match[1]) + 1 : null, field, code: problem.code, message: problem.message };
    });
  }
}

type Step = 'customer' | 'irms' | 'lines' | 'review';
const STEPS: { id: Step; label: string }[] = [
  { id: 'customer', label: 'Customer' },
  { id: 'irms', label: 'IRMs' },
  { id: 'lines', label: 'Invoices' },
  { id: 'review', label: 'Review and push' },
];

function page(request: FastifyRequest, reply: FastifyReply, step: Step, data: Record<string, unknown> & { title: string }, status = 200) {
  const at = STEPS.findIndex((entry) => entry.id === step);
  return render(request, reply, `generate/${step}`, { steps: STEPS.map((entry, index) => ({ ...entry, number: index + 1, current: index === at, done: index < at })), ...data }, status);
}

async function customerStep(request: FastifyRequest, reply: FastifyReply, deps: Deps, form: { values: Record<string, string>; fields: Record<string, string>; problem: Problem | null }) {
  const customers = await listCustomers(deps.database.db, platformOf(request), { page: 1, limit: PICKER_SIZE });
  const verified = customers.items.filter((customer) => customer.authorityCredentialsStatus === 'valid');
  return page(request, reply, 'customer', {
    title: 'Generate eBRCs',
    customers: verified,
    unverified: customers.items.length - verified.length,
    uploadTypes: UPLOAD_TYPES,
    form,
  }, form.problem?.status ?? 200);
}

async function irmsStep(request: FastifyRequest, reply: FastifyReply, deps: Deps, state: WizardState, pageNumber: number, problem: Problem | null = null, find = '') {
  const platformId = platformOf(request);
  const customer = await customerOf(deps, platformId, state.customerId);
  const listed = await refreshIrms(deps.context, deps.irmPuller, platformId, customer.id, { page: pageNumber, limit: IRM_PAGE_SIZE, ...(find === '' ? {} : { irmNumber: find }) }, null);
  const irms = listed.data.filter(mappable);
  return page(request, reply, 'irms', {
    title: 'Generate eBRCs: IRMs',
    customer,
    state,
    stateJson: JSON.stringify(state),
    irms,
    unmappable: listed.data.length - irms.length,
    picked: new Set(state.irms),
    shownNumbers: listed.data.map((irm) => irm.irmNumber),
    meta: listed.meta,
    find,
    problem,
  }, problem?.status ?? 200);
}

async function linesStep(
  request: FastifyRequest,
  reply: FastifyReply,
  deps: Deps,
  state: WizardState,
  extra: { problems?: LineProblems; problem?: Problem | null; notice?: string | null } = {},
) {
  const platformId = platformOf(request);
  const customer = await customerOf(deps, platformId, state.customerId);
  const irms = await storedIrms(deps, platformId, customer.id, state.irms);
  return page(request, reply, 'lines', {
    title: 'Generate eBRCs: invoices',
    customer,
    state,
    stateJson: JSON.stringify({ ...state, lines: [] }),
    irms: state.irms.flatMap((number) => irms.get(number) ?? []),
    lines: state.lines,
    problems: extra.problems ?? state.lines.map(() => ({})),
    problem: extra.problem ?? null,
    notice: extra.notice ?? null,
    deductions: DEDUCTIONS,
  }, extra.problem?.status ?? 200);
}

async function reviewStep(request: FastifyRequest, reply: FastifyReply, deps: Deps, state: WizardState, problem: Problem | null = null) {
  const platformId = platformOf(request);
  const customer = await customerOf(deps, platformId, state.customerId);
  const irms = await storedIrms(deps, platformId, customer.id, state.irms);
  const body = pushBodyOf(state, irms);
  const errors = await reviewOf(deps, platformId, body);
  const lines = state.lines.map((line, index) => {
    const irm = irms.get(line.irmNumber);
    const currency = irm?.remittanceFCC ?? line.invoiceCurrency;
    const deductions = DEDUCTIONS.flatMap((deduction) => {
      const amount = amountText(line[deduction.name]);
      return amount === null || amount === '0.00' ? [] : [{ label: deduction.label, amount }];
    });
    return {
      serialNo: index + 1,
      line,
      currency,
      invoiceCurrency: line.invoiceCurrency === '' ? currency : line.invoiceCurrency,
      invoiceValue: amountText(line.invoiceValue),
      mappedAmount: amountText(line.mappedAmount),
      available: irm === undefined ? null : formatCents(parseMoney(irm.irmAvailableAmt) ?? 0n),
      deductions,
      errors: errors.filter((error) => error.serialNo === index + 1).map((error) => ({ ...error, field: error.field === null ? null : (WIRE_FIELDS[error.field] ?? error.field) })),
    };
  });
  const pushErrors = errors.filter((error) => error.serialNo === null || error.serialNo > state.lines.length);
  return page(request, reply, 'review', {
    title: 'Generate eBRCs: review',
    customer,
    state,
    stateJson: JSON.stringify(state),
    // The push's Idempotency-Key, one per review shown: a second submit of this form (a double click, a resend) finds
    // the first push's request instead of pushing again.
    pushKey: `console-push-${randomUUID()}`,
    lines,
    pushErrors,
    problemCount: errors.length,
    problem,
  }, problem?.status ?? 200);
}

/** "Suggest from matching": the matching service's allocations for the lines typed without an IRM. */
async function suggest(deps: Deps, platformId: string, state: WizardState): Promise<{ state: WizardState; notice: string; problems: LineProblems }> {
  const open = state.lines.map((line, index) => ({ line, index })).filter(({ line }) => line.irmNumber === '');
  const problems: LineProblems = state.lines.map(() => ({}));
  if (open.length === 0) {
    return { state, problems, notice: 'Every line already has an IRM: to match an invoice, choose “None yet” as its IRM and ask again.' };
  }
  for (const { line, index } of open) {
    for (const [field, message] of Object.entries(REQUIRED)) if (line[field as LineField] === '') problems[index]![field] = message;
    if (line.invoiceValue !== '' && amountText(line.invoiceValue) === null) problems[index]!.invoiceValue = 'Enter an amount such as 1250.50: digits, at most two decimals.';
    if (!/^[A-Z]{3}$/.test(line.invoiceCurrency)) problems[index]!.invoiceCurrency = 'Enter the invoice’s currency (three capital letters, such as USD): only IRMs in it can pay it.';
  }
  if (hasProblems(problems)) return { state, problems, notice: '' };
  const answer = await matchIrms(deps.context, deps.irmPuller, platformId, state.customerId, {
    uploadType: state.uploadType,
    invoices: open.map(({ line }) => ({
      sbCumInvoiceNumber: line.invoiceNumber,
      sbCumInvoiceDate: line.invoiceDate,
      sbCumInvoiceFCC: line.invoiceCurrency,
      sbCumInvoiceValueinFCC: amountNumber(amountText(line.invoiceValue)!),
      portCode: line.portCode.toUpperCase(),
      billNo: line.billNo,
    })),
  });
  const lines: WizardLine[] = [];
  const irms = [...state.irms];
  let filled = 0;
  for (const line of state.lines) {
    const allocations = line.irmNumber === '' ? answer.allocations.filter((allocation) => allocation.sbCumInvoiceNumber === line.invoiceNumber) : [];
    if (allocations.length === 0) {
      lines.push(line);
      continue;
    }
    for (const allocation of allocations) {
      filled++;
      if (!irms.includes(allocation.irmNumber)) irms.push(allocation.irmNumber);
      lines.push({ ...line, irmNumber: allocation.irmNumber, mappedAmount: formatCents(parseMoney(allocation.mappedIRMAmountFCC) ?? 0n) });
    }
  }
  const unmatched = answer.unmatchedInvoices.length;
  const notice =
    `Matching filled ${filled} ${filled === 1 ? 'line' : 'lines'} from the customer’s IRMs.` +
    (unmatched > 0 ? ` ${unmatched} ${unmatched === 1 ? 'invoice is' : 'invoices are'} not fully covered: choose an IRM for ${unmatched === 1 ? 'it' : 'them'} yourself.` : '') +
    ' Check the amounts, then review.';
  return { state: { ...state, irms: irms.slice(0, MAX_IRMS), lines: lines.slice(0, MAX_LINES) }, problems: lines.map(() => ({})), notice };
}

export const generatePage: ConsolePage = {
  nav: { label: 'Generate', href: GENERATE },
  routes(app: Api, deps: Deps): void {
    // (a) The customer and the kind of eBRCs.
    app.get('/generate', async (request, reply) => customerStep(request, reply, deps, { values: { uploadType: '101' }, fields: {}, problem: null }));

    // (b) The customer's IRMs with a balance: from (a), or paging and picking within (b).
    app.post('/generate/irms', async (request, reply) => {
      const fields = formFields(request.body);
      if (text(fields, 'state') === '') {
        const values = { customerId: text(fields, 'customerId'), uploadType: text(fields, 'uploadType') };
        try {
          const state = validated<WizardState>(WizardStateSchema, { customerId: values.customerId, uploadType: values.uploadType, irms: [], lines: [] });
          await customerOf(deps, platformOf(request), state.customerId);
          return await irmsStep(request, reply, deps, state, 1);
        } catch (error) {
          const problem = failureOf(request, error, { customerId: 'Customer', uploadType: 'Kind of eBRCs' });
          if (problem.code === 'not_found') throw error;
          return customerStep(request, reply, deps, { values, fields: values.customerId === '' ? { customerId: 'Choose a customer.' } : problem.fields, problem });
        }
      }
      const state = stateOf(fields);
      // The boxes of the page shown: checked ones are picked, the others not; picks on other pages stay.
      const shown = new Set(list(fields, 'shown'));
      const checked = list(fields, 'irm');
      state.irms = [...state.irms.filter((number) => !shown.has(number)), ...checked.filter((number, index) => checked.indexOf(number) === index)];
      const action = text(fields, 'action');
      const pageNumber = Math.max(1, Number.parseInt(text(fields, 'page') || text(fields, 'at'), 10) || 1);
      const find = action === 'all' ? '' : text(fields, 'find').slice(0, 50);
      if (action !== 'next') return irmsStep(request, reply, deps, state, action === 'find' ? 1 : pageNumber, null, find);
      const problem = (detail: string): Problem => ({ status: 400, code: 'validation_failed', title: 'Choose IRMs', detail, fields: {} });
      if (state.irms.length === 0) return irmsStep(request, reply, deps, state, pageNumber, problem('Choose at least one IRM to map.'));
      if (state.irms.length > MAX_IRMS) return irmsStep(request, reply, deps, state, pageNumber, problem(`Choose at most ${MAX_IRMS} IRMs at a time.`));
      const stored = await storedIrms(deps, platformOf(request), state.customerId, state.irms);
      const refused = state.irms.filter((number) => { const irm = stored.get(number); return irm === undefined || !mappable(irm); });
      if (refused.length > 0) return irmsStep(request, reply, deps, state, pageNumber, problem(`These IRMs cannot be mapped now (no balance left, or not the customer’s): ${refused.join(', ')}.`));
      // One line per IRM picked, keeping the lines already typed for IRMs still picked.
      const kept = state.lines.filter((line) => line.irmNumber === '' || state.irms.includes(line.irmNumber));
      const lines = [...kept, ...state.irms.filter((number) => !kept.some((line) => line.irmNumber === number)).map((number) => blankLine(number))];
      return linesStep(request, reply, deps, { ...state, lines: lines.slice(0, MAX_LINES) });
    });

    // (c) The invoices: add a line, remove one, ask matching, go back to the IRMs, or review.
    app.post('/generate/lines', async (request, reply) => {
      const fields = formFields(request.body);
      const state = stateOf(fields);
      const action = text(fields, 'action');
      if (action === 'edit') return linesStep(request, reply, deps, state);
      state.lines = linesOf(fields);
      await customerOf(deps, platformOf(request), state.customerId);
      if (action === 'back') return irmsStep(request, reply, deps, state, 1);
      if (action === 'add') {
        if (state.lines.length < MAX_LINES) state.lines.push(blankLine());
        return linesStep(request, reply, deps, state);
      }
      if (action.startsWith('remove-')) {
        state.lines.splice(Number(action.slice('remove-'.length)), 1);
        return linesStep(request, reply, deps, state);
      }
      if (action === 'suggest') {
        try {
          const suggested = await suggest(deps, platformOf(request), state);
          const problem: Problem | null = hasProblems(suggested.problems)
            ? { status: 400, code: 'validation_failed', title: 'Matching needs more of the invoices', detail: 'Fill in the fields marked below for the lines without an IRM, then ask again.', fields: {} }
            : null;
          return await linesStep(request, reply, deps, suggested.state, { problems: suggested.problems, problem, notice: problem === null ? suggested.notice : null });
        } catch (error) {
          return linesStep(request, reply, deps, state, { problem: failureOf(request, error) });
        }
      }
      const problems = formProblems(state.lines, new Set(state.irms));
      if (state.lines.length === 0 || hasProblems(problems)) {
        const count = problems.reduce((sum, line) => sum + Object.keys(line).length, 0);
        const detail = state.lines.length === 0 ? 'Add at least one line.' : `${count} ${count === 1 ? 'field needs' : 'fields need'} a change: see the messages on the lines.`;
        return linesStep(request, reply, deps, state, { problems, problem: { status: 400, code: 'validation_failed', title: 'The lines are not complete', detail, fields: {} } });
      }
      // (d) The review: the push's checks, nothing sent.
      return reviewStep(request, reply, deps, state);
    });

    // (e) The push, checked once more; (f) the request's page with its lines.
    app.post('/generate/push', { config: { audit: 'genebrc_request.push' } }, async (request, reply) => {
      const fields = formFields(request.body);
      const state = stateOf(fields);
      const platformId = platformOf(request);
      const customer = await customerOf(deps, platformId, state.customerId);
      const problems = formProblems(state.lines, new Set(state.irms));
      if (state.lines.length === 0 || hasProblems(problems)) return linesStep(request, reply, deps, state, { problems });
      const irms = await storedIrms(deps, platformId, customer.id, state.irms);
      const body = pushBodyOf(state, irms);
      const errors = await reviewOf(deps, platformId, body);
      if (errors.length > 0) {
        return reviewStep(request, reply, deps, state, {
          status: 409,
          code: 'push_rules',
          title: 'Nothing was pushed',
          detail: 'The lines no longer pass the push’s checks (an IRM changed since the review): see the problems below.',
          fields: {},
        });
      }
      const requestPage = (requestId: string) => reply.redirect(`/console/requests/${customer.id}/${encodeURIComponent(requestId)}`, 303);
      const key = text(fields, 'pushKey');
      if (!PUSH_KEY.test(key)) throw new AppError('validation_failed', 'The form has no push key: go back to the review and push from there.', { errors: [] });
      const claim = { platformId, key, claimId: randomUUID() };
      const db = deps.database.db;
      const held = await claimKey(db, { ...claim, fingerprint: createHash('sha256').update(text(fields, 'state', { raw: true })).digest('hex'), keepHours: 24, abandonAfterSeconds: 120 });
      if (held !== null) {
        // This form was sent before: its push's request, once stored, is the answer; nothing is pushed again.
        const ack = held.resourceId === null ? null : await storedAcknowledgement(db, platformId, held.resourceId);
        if (ack !== null) return requestPage(ack.requestId);
        return reviewStep(request, reply, deps, state, {
          status: 409,
          code: 'push_in_progress',
          title: 'This push is being sent',
          detail: 'This form was sent already and its push is on its way: open Requests in a moment to follow it, rather than pushing again.',
          fields: {},
        });
      }
      try {
        const ack = await deps.push.push(platformId, body, auditSourceOf(request), async (tx, resourceId) => {
          await linkResource(tx, claim, resourceId);
        });
        await completeKey(db, claim, { statusCode: 303, responseBody: ack.requestId });
        return requestPage(ack.requestId);
      } catch (error) {
        // Nothing of it was committed unless the push stored its request (then the key stays linked to it).
        await releaseKey(db, claim, { evenIfCommitted: false });
        return reviewStep(request, reply, deps, state, failureOf(request, error));
      }
    });
  },
};

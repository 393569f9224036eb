import type { FastifyReply, FastifyRequest } from 'fastify';
import { auditSourceOf } from '../../audit-source.ts';
import { AppError } from '../../../errors.ts';
import { storeApiCredentials } from '../../../services/authority-api-credentials.ts';
import { checkAuthorityCredentials } from '../../../services/authority-credentials.ts';
import { createCustomer, listCustomers, requireCustomer, type NewCustomer } from '../../../services/customers.ts';
import { toCustomer, type Customer } from '../../../services/customer-view.ts';
import type { Api, Deps } from '../../deps.ts';
import { ApiCredentialSetBody, CheckCredentialsBody, CreatePlatformCustomerBody, CustomerListQuery } from '../../../schemas/platform-customers.ts';
import { formFields, optional, text, validated, type FormFields, type Problem } from '../forms.ts';
import type { ConsolePage } from '../page.ts';
import { failureOf, platformOf, queryOf, redirectTo, render } from '../render.ts';

const PAGE_SIZE = 20;
const CUSTOMERS = '/console/customers';

const NOTICES: Record<string, string> = {
  created: 'The customer was created. Next, check its credentials at the authority.',
  verified: 'The authority accepted the credentials: the customer is verified.',
  'api-credentials-stored': 'The API credential set was stored. Every call to the authority for this customer now uses it.',
  'reconcile-started': 'A reconciliation is running: the IRMs and eBRCs are being brought up to date with the authority. Reload to see what it changed.',
};

const CUSTOMER_LABELS = { name: 'Name', email: 'E-mail', companyName: 'Company name', address: 'Address' };
const CHECK_LABELS = { authorityUsername: 'Username', authorityPassword: 'Password' };

type FormState = { values: Record<string, string>; fields: Record<string, string>; problem: Problem | null };
const blankForm = (values: Record<string, string> = {}): FormState => ({ values, fields: {}, problem: null });

async function listPage(request: FastifyRequest, reply: FastifyReply, deps: Deps, create: FormState = blankForm()): Promise<FastifyReply> {
  const query = queryOf(request);
  const search = optional(query, 'search');
  let page;
  let listProblem: Problem | null = null;
  try {
    const checked = validated<{ page: number; limit: number; search?: string }>(
      CustomerListQuery,
      { page: optional(query, 'page') ?? '1', limit: String(PAGE_SIZE), ...(search === undefined ? {} : { search }) },
      'query',
    );
    page = await listCustomers(deps.database.db, platformOf(request), checked);
  } catch (error) {
    listProblem = failureOf(request, error, { search: 'Search', page: 'Page' });
    page = { items: [], meta: { totalItems: 0, itemsPerPage: PAGE_SIZE, totalPages: 0, currentPage: 1 } };
  }
  const status = create.problem?.status ?? listProblem?.status ?? 200;
  return render(request, reply, 'customers/list', { title: 'Customers', page, search: search ?? '', listProblem, create }, status);
}

async function detailPage(
  request: FastifyRequest,
  reply: FastifyReply,
  deps: Deps,
  forms: { check?: FormState; apiCredentials?: FormState; reconcile?: Problem } = {},
): Promise<FastifyReply> {
  const { id } = request.params as { id: string };
  const customer: Customer = toCustomer(await requireCustomer(deps.database.db, platformOf(request), id));
  const notice = NOTICES[text(queryOf(request), 'notice')] ?? null;
  const check = forms.check ?? blankForm({ authorityUsername: '' });
  const apiCredentials = forms.apiCredentials ?? blankForm({ credentialSet: '', envelopeProfile: '' });
  const status = check.problem?.status ?? apiCredentials.problem?.status ?? forms.reconcile?.status ?? 200;
  // The reconciliation panel: the last run, what it changed, and "Reconcile now" (contract 13).
  const [lastRun] = (await deps.reconciliations.list(platformOf(request), customer.id, { page: 1, limit: 1 })).items;
  return render(
    request,
    reply,
    'customers/detail',
    { title: customer.name, customer, notice, check, apiCredentials, lastRun: lastRun ?? null, reconcileProblem: forms.reconcile ?? null, authorityMode: deps.config.authorityMode },
    status,
  );
}

/** The API credential set as pasted (the portal's JSON file), with the profile chosen, checked as the API checks it. */
function credentialSetOf(fields: FormFields): Record<string, unknown> {
  const pasted = text(fields, 'credentialSet');
  let parsed: unknown;
  try {
    parsed = JSON.parse(pasted);
  } catch {
    const message = pasted === '' ? 'Paste the credential set: the JSON file from the authority’s portal.' : 'This is not JSON: paste the whole file as it is.';
    throw new AppError('validation_failed', message, { errors: [{ path: '/credentialSet', code: 'invalid_json', message }] });
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    const message = 'The credential set is a JSON object ({ … }): paste the whole file as it is.';
    throw new AppError('validation_failed', message, { errors: [{ path: '/credentialSet', code: 'invalid_type', message }] });
  }
  const profile = optional(fields, 'envelopeProfile');
  return validated(ApiCredentialSetBody, { ...(parsed as Record<string, unknown>), ...(profile === undefined ? {} : { envelopeProfile: profile }) });
}

/** Every problem with the pasted set is the text area's: the set's own field names say which part of it. */
function credentialSetProblem(problem: Problem): Problem {
  const messages = Object.entries(problem.fields).map(([field, message]) =>
    field === 'credentialSet' || message.startsWith(field) ? message : `${field}: ${message}`,
  );
  return messages.length === 0 ? problem : { ...problem, fields: { credentialSet: messages.join(' ') } };
}

export const customersPage: ConsolePage = {
  nav: { label: 'Customers', href: CUSTOMERS },
  routes(app: Api, deps: Deps): void {
    app.get('/customers', async (request, reply) => listPage(request, reply, deps));

    app.post('/customers', { config: { audit: 'platform_customer.create' } }, async (request, reply) => {
      const fields = formFields(request.body);
      const values = { name: text(fields, 'name'), email: text(fields, 'email'), companyName: text(fields, 'companyName'), address: text(fields, 'address') };
      try {
        const input = validated<NewCustomer>(CreatePlatformCustomerBody, {
          name: values.name,
          email: values.email,
          companyName: values.companyName,
          ...(values.address === '' ? {} : { address: values.address }),
        });
        const customer = await createCustomer(deps.database.db, platformOf(request), input, auditSourceOf(request));
        return redirectTo(reply, `${CUSTOMERS}/${customer.id}`, 'created');
      } catch (error) {
        const problem = failureOf(request, error, CUSTOMER_LABELS);
        return listPage(request, reply, deps, { values, fields: problem.fields, problem });
      }
    });

    app.get('/customers/:id', async (request, reply) => detailPage(request, reply, deps));

    app.post('/customers/:id/check-credentials', { config: { audit: 'platform_customer.verify' } }, async (request, reply) => {
      const { id } = request.params as { id: string };
      const fields = formFields(request.body);
      const values = { authorityUsername: text(fields, 'authorityUsername') };
      try {
        const body = validated<{ authorityUsername: string; authorityPassword: string }>(CheckCredentialsBody, {
          authorityUsername: values.authorityUsername,
          authorityPassword: text(fields, 'authorityPassword', { raw: true }),
        });
        const customer = await checkAuthorityCredentials(deps.context, platformOf(request), id, body, auditSourceOf(request));
        return redirectTo(reply, `${CUSTOMERS}/${customer.id}`, 'verified');
      } catch (error) {
        const problem = failureOf(request, error, CHECK_LABELS);
        // Another platform's customer (or none) is a 404 page, not a form error.
        if (problem.code === 'not_found') throw error;
        return detailPage(request, reply, deps, { check: { values, fields: problem.fields, problem } });
      }
    });

    app.post('/customers/:id/reconcile', { config: { audit: 'reconciliation.request' } }, async (request, reply) => {
      const { id } = request.params as { id: string };
      try {
        await deps.reconciliations.request(platformOf(request), id, auditSourceOf(request));
        return redirectTo(reply, `${CUSTOMERS}/${id}`, 'reconcile-started');
      } catch (error) {
        const problem = failureOf(request, error, {});
        if (problem.code === 'not_found') throw error;
        return detailPage(request, reply, deps, { reconcile: problem });
      }
    });

    app.post('/customers/:id/api-credentials', { config: { audit: 'authority_credentials.store' } }, async (request, reply) => {
      const { id } = request.params as { id: string };
      const fields = formFields(request.body);
      const values = { credentialSet: '', envelopeProfile: text(fields, 'envelopeProfile') };
      try {
        const body = credentialSetOf(fields);
        const customer = await storeApiCredentials(deps.context, platformOf(request), id, body, deps.config.authorityEnvelopeProfile, auditSourceOf(request));
        return redirectTo(reply, `${CUSTOMERS}/${customer.id}`, 'api-credentials-stored');
      } catch (error) {
        const problem = failureOf(request, error);
        if (problem.code === 'not_found') throw error;
        const shown = credentialSetProblem(problem);
        // The pasted set holds secrets: it is not sent back to the page; the user pastes it again.
        return detailPage(request, reply, deps, { apiCredentials: { values, fields: shown.fields, problem: shown } });
      }
    });
  },
};

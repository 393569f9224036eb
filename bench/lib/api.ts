/** A small client of the service's API for the benchmark's setup steps (not for the measured load). */
export class ApiClient {
  readonly baseUrl: string;
  readonly apiKey: string;

  constructor(baseUrl: string, apiKey: string) {
    this.baseUrl = baseUrl;
    this.apiKey = apiKey;
  }

  get headers(): Record<string, string> {
    return { 'x-api-key': this.apiKey, 'content-type': 'application/json' };
  }

  async call<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<{ status: number; body: T; headers: Headers }> {
    const response = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers: this.headers,
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(120_000),
    });
    const text = await response.text();
    return { status: response.status, body: (text ? JSON.parse(text) : null) as T, headers: response.headers };
  }

  /** Like call, but anything other than the expected status is an error naming the call. */
  async expect<T>(status: number, method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    const answer = await this.call<T>(method, path, body);
    if (answer.status !== status) {
      throw new Error(`${method} ${path} answered ${answer.status}, expected ${status}: ${JSON.stringify(answer.body).slice(0, 500)}`);
    }
    return answer.body;
  }
}

/** The fields of an IRM (as POST /irm/refresh answers it) that a push line needs. */
export type ApiIrm = {
  irmNumber: string;
  irmIssueDate: string;
  ifscCode: string;
  remittanceAdCode: string;
  remittanceFCC: string;
  purposeOfRemittance: string;
  irmAvailableAmt: number;
  remittanceFCCAmount: number;
};

export type IrmPage = { data: ApiIrm[]; meta: { total: number; page: number; limit: number; totalPages: number } };

export function irmPagePath(customerId: string, page: number, limit: number, dates?: { fromDate: string; toDate: string }): string {
  const query = new URLSearchParams({ platformCustomerId: customerId, page: String(page), limit: String(limit) });
  if (dates) {
    query.set('fromDate', dates.fromDate);
    query.set('toDate', dates.toDate);
  }
  return `/api/v1/irm/refresh?${query}`;
}

/** Every IRM of a customer, page by page (at most `maxPages`). */
export async function allIrms(api: ApiClient, customerId: string, maxPages = 500): Promise<ApiIrm[]> {
  const irms: ApiIrm[] = [];
  for (let page = 1; page <= maxPages; page++) {
    const answer = await api.expect<IrmPage>(200, 'POST', irmPagePath(customerId, page, 100), {});
    irms.push(...answer.data);
    if (page >= answer.meta.totalPages) break;
  }
  return irms;
}

/**
 * A customer created through the API and verified with a sandbox account (`label` tells the benchmarks' customers
 * apart). Its IRMs are pulled from the sandbox by the first refresh that follows.
 */
export async function createVerifiedCustomer(api: ApiClient, account: string, label: string, password: string): Promise<string> {
  const customer = await api.expect<{ id: string }>(201, 'POST', '/api/v1/platform-customers', {
    name: `${label} pusher ${account}`,
    email: `${label.toLowerCase()}+${account}@pushers.example`,
    companyName: `${label} ${account} Pvt Ltd`,
  });
  await api.expect(200, 'POST', `/api/v1/platform-customers/${customer.id}/check-authority-credentials`, {
    authorityUsername: account,
    authorityPassword: password,
  });
  return customer.id;
}

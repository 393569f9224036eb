import { AuthorityError, type Authority, type CallOptions } from './authority.ts';

/**
 * Gives every authority call a deadline: past `timeoutMs` the call is aborted and fails with
 * AuthorityError('timeout'), even when the implementation ignores the abort signal.
 */
export function withDeadline(authority: Authority, timeoutMs: number): Authority {
  const guard = <T>(call: (options: CallOptions) => Promise<T>): Promise<T> => {
    const controller = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => {
        controller.abort();
        reject(new AuthorityError('timeout', `the authority did not answer within ${timeoutMs} ms`));
      }, timeoutMs);
    });
    return Promise.race([call({ signal: controller.signal }), expired]).finally(() => clearTimeout(timer));
  };
  return {
    checkCredentials: (credentials) => guard((options) => authority.checkCredentials(credentials, options)),
    fetchIrms: (credentials, query) => guard((options) => authority.fetchIrms(credentials, query, options)),
    push: (credentials, message) => guard((options) => authority.push(credentials, message, options)),
    getStatus: (credentials, requestId) => guard((options) => authority.getStatus(credentials, requestId, options)),
    fetchEbrcs: (credentials, query) => guard((options) => authority.fetchEbrcs(credentials, query, options)),
  };
}

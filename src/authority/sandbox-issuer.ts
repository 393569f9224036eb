/**
 * The service's side of the sandbox program's POST /sandbox/issueApiCredentials: in `sandbox` mode a credential
 * check logs in with the test account's username and password and receives its API credential set, as an exporter
 * downloads it from the real authority's portal.
 */
import { AuthorityError, type PortalLogin, type SandboxCredentialIssuer } from './authority.ts';
import { parseCredentialSet } from './protocol/credentials.ts';
import type { EnvelopeProfile } from './protocol/envelope.ts';

const ISSUE_API_CREDENTIALS_PATH = '/sandbox/issueApiCredentials';

export function createSandboxCredentialIssuer(options: {
  /** The sandbox's base URL (AUTHORITY_URL). */
  baseUrl: string;
  /** The profile of a set whose file does not name one. */
  defaultProfile: EnvelopeProfile;
  timeoutMs: number;
}): SandboxCredentialIssuer {
  const url = `${options.baseUrl.replace(/\/+$/, '')}${ISSUE_API_CREDENTIALS_PATH}`;
  return {
    async issueApiCredentials(login: PortalLogin, callOptions) {
      const deadline = AbortSignal.timeout(options.timeoutMs);
      const signal = callOptions?.signal === undefined ? deadline : AbortSignal.any([deadline, callOptions.signal]);
      let status: number;
      let body: unknown;
      try {
        const response = await fetch(url, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ username: login.username, password: login.password }),
          signal,
        });
        status = response.status;
        body = await response.json().catch(() => undefined);
      } catch (error) {
        if (signal.aborted) throw new AuthorityError('timeout', `The sandbox did not issue a credential set within ${options.timeoutMs} ms.`);
        throw new AuthorityError('unavailable', `The sandbox could not be reached at ${url}: ${String((error as Error).cause ?? error)}.`);
      }
      if (status === 401) {
        const expired = (body as { error?: unknown } | undefined)?.error === 'credentials_expired';
        throw new AuthorityError(
          expired ? 'credentials_expired' : 'credentials_invalid',
          expired ? 'The sandbox says these credentials have expired.' : 'The sandbox refused the username or password.',
          { httpStatus: 401 },
        );
      }
      if (status === 429 || status >= 500) {
        throw new AuthorityError('unavailable', `The sandbox answered HTTP ${status} to ${ISSUE_API_CREDENTIALS_PATH}.`, { httpStatus: status });
      }
      const parsed = status === 200 ? parseCredentialSet(body, options.defaultProfile) : null;
      if (parsed === null || !parsed.ok) {
        throw new AuthorityError(
          'misconfigured',
          `${url} did not answer with a credential set (HTTP ${status}): is AUTHORITY_URL the sandbox's address?`,
          { httpStatus: status, profile: options.defaultProfile },
        );
      }
      return parsed.credentials;
    },
  };
}

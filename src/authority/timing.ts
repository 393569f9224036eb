import { Histogram, type Registry } from 'prom-client';
import { inSpan, type SpanAttributes } from '../telemetry/spans.ts';
import type { Authority } from './authority.ts';

type Operation = keyof Authority;

/** `authority_call_duration_seconds`: how long each authority call took, by operation and outcome (ok or error). */
export function createAuthorityCallHistogram(registry: Registry): Histogram<'operation' | 'outcome'> {
  return new Histogram({
    name: 'authority_call_duration_seconds',
    help: "Time of each call to the authority (retries within the call included), by operation and outcome",
    labelNames: ['operation', 'outcome'],
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
}

/**
 * Times every call of `authority` into `histogram`: the authority's share of a request's time (a push's answer waits
 * for its acknowledgement) is told apart from the service's own. With tracing on, each call is a span too
 * (`authority <operation>`, with the GenEBRC requestId where the call has one).
 */
export function withTiming(authority: Authority, histogram: Histogram<'operation' | 'outcome'>): Authority {
  const timed = <A extends unknown[], T>(operation: Operation, call: (...args: A) => Promise<T>, attributes: (...args: A) => SpanAttributes = () => ({})) =>
    (...args: A): Promise<T> =>
      inSpan(`authority ${operation}`, { 'authority.operation': operation, ...attributes(...args) }, async () => {
        const end = histogram.startTimer({ operation });
        try {
          const result = await call(...args);
          end({ outcome: 'ok' });
          return result;
        } catch (error) {
          end({ outcome: 'error' });
          throw error;
        }
      });
  return {
    checkCredentials: timed('checkCredentials', (credentials, options) => authority.checkCredentials(credentials, options)),
    fetchIrms: timed('fetchIrms', (credentials, query, options) => authority.fetchIrms(credentials, query, options)),
    push: timed('push', (credentials, message, options) => authority.push(credentials, message, options), (_credentials, message) => ({ 'ebrc.genebrc_request_id': message.requestId })),
    getStatus: timed('getStatus', (credentials, requestId, options) => authority.getStatus(credentials, requestId, options), (_credentials, requestId) => ({ 'ebrc.genebrc_request_id': requestId })),
    fetchEbrcs: timed('fetchEbrcs', (credentials, query, options) => authority.fetchEbrcs(credentials, query, options)),
  };
}

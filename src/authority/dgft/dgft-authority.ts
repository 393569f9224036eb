/**
 * The Authority the service uses, for the real authority and the sandbox program alike: the wire protocol's client
 * (dgft-client.ts) behind the service's five operations.
 */
import type { Authority } from '../authority.ts';
import type { DgftClient } from './dgft-client.ts';
import { WireFailure } from './wire-failure.ts';

export function createDgftAuthority(client: DgftClient, now: () => Date = () => new Date()): Authority {
  return {
    async checkCredentials(credentials, options) {
      await client.getAccessToken(credentials, options);
      // Today's IRMs only: enough to prove the set may read its IEC, without pulling thousands of IRMs.
      const today = now().toISOString().slice(0, 10);
      await client.fetchIrmDetails(credentials, { iecCode: credentials.iecCode, fromDate: today, toDate: today }, options);
    },
    fetchIrms: (credentials, query, options) => client.fetchIrmDetails(credentials, query, options),
    async push(credentials, message, options) {
      const outcome = await client.pushIrmToGenEbrc(credentials, message, options);
      if (outcome.kind === 'acknowledged') return outcome.acknowledgement;
      // ERR09: an earlier attempt of this push reached the authority; its status is the acknowledgement.
      const status = await client.getRequestStatus(credentials, message.requestId, options);
      if (status === null) {
        // The authority has the request but does not report it yet: its outcome is unknown, as after a timeout.
        throw new WireFailure(
          'timeout',
          'getRequestStatus',
          `The authority answered ERR09 (already received) to request ${message.requestId}, but does not report its status yet.`,
        );
      }
      return {
        ackId: status.ackId,
        requestId: status.requestId,
        ackStatus: status.ackStatus,
        recordResCount: status.recordResCount,
        errorDetails: status.errorDetails,
      };
    },
    getStatus: (credentials, requestId, options) => client.getRequestStatus(credentials, requestId, options),
    fetchEbrcs: (credentials, query, options) => client.fetchEbrcDetails(credentials, query, options),
  };
}

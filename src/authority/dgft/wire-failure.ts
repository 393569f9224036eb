import type { EnvelopeProfile } from '../protocol/envelope.ts';
import type { OperationName } from '../protocol/messages.ts';

/**
 * credentials_invalid  HTTP 401 (after one token renewal) or ERR01: the client id or secret is wrong.
 * ip_not_whitelisted   HTTP 403: the caller's egress IP is not on the authority's list.
 * misconfigured        ERR02-ERR06, an answer that fails its signature or decryption, or that does not read as the
 *                      protocol says: our side of the protocol is wrong (profile, keys, URL), never the user's input.
 * unavailable          429, 5xx or a failed connection, still so when the deadline came.
 * timeout              the deadline passed, or the last attempt timed out.
 */
export type WireFailureKind = 'credentials_invalid' | 'ip_not_whitelisted' | 'misconfigured' | 'unavailable' | 'timeout';

export type WireFailureDetails = {
  httpStatus?: number;
  authorityCode?: string;
  profile?: EnvelopeProfile;
  egressIp?: string;
};

/** Why a call to the authority failed; a later step maps it into the service's errors. */
export class WireFailure extends Error {
  readonly kind: WireFailureKind;
  readonly operation: OperationName;
  readonly httpStatus: number | null;
  /** The authority's code (ERR01-ERR06, or another it sent), when it sent one. */
  readonly authorityCode: string | null;
  /** The envelope profile in use; always set for misconfigured. */
  readonly profile: EnvelopeProfile | null;
  /** For ip_not_whitelisted: the configured egress address the authority has to whitelist, when known. */
  readonly egressIp: string | null;
  constructor(kind: WireFailureKind, operation: OperationName, message: string, details: WireFailureDetails = {}) {
    super(message);
    this.name = 'WireFailure';
    this.kind = kind;
    this.operation = operation;
    this.httpStatus = details.httpStatus ?? null;
    this.authorityCode = details.authorityCode ?? null;
    this.profile = details.profile ?? null;
    this.egressIp = details.egressIp ?? null;
  }
}

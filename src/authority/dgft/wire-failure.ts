import { AuthorityError, type AuthorityFailure, type AuthorityFailureDetails } from '../authority.ts';
import type { OperationName } from '../protocol/messages.ts';

export type WireFailureKind = Exclude<AuthorityFailure, 'credentials_expired'>;

/** An authority call that failed on the wire, with the operation it failed in. */
export class WireFailure extends AuthorityError {
  readonly operation: OperationName;
  constructor(failure: WireFailureKind, operation: OperationName, message: string, details: AuthorityFailureDetails = {}) {
    super(failure, message, details);
    this.name = 'WireFailure';
    this.operation = operation;
  }
}

/** The GenEBRC request states clients see. */
export const REQUEST_STATUSES = ['FAILED', 'PENDING', 'PROCESSED', 'PARTIALLY_PROCESSED', 'ERRORED'] as const;
export type RequestStatus = typeof REQUEST_STATUSES[number];

/** SUBMITTING: reserved locally, not yet acknowledged by the authority; never shown to clients. */
export type StoredRequestStatus = RequestStatus | 'SUBMITTING';

/** The status a client sees for a stored one: SUBMITTING is ours alone, to clients a request still pending at the authority. */
export function visibleStatus(status: string): RequestStatus {
  return (status === 'SUBMITTING' ? 'PENDING' : status) as RequestStatus;
}

export const LINE_STATUSES = ['PENDING', 'GENERATED', 'FAILED'] as const;
export type LineStatus = typeof LINE_STATUSES[number];

const NEXT_STATUSES: Readonly<Record<StoredRequestStatus, readonly StoredRequestStatus[]>> = {
  SUBMITTING: ['PENDING', 'FAILED'],
  PENDING: ['PROCESSED', 'PARTIALLY_PROCESSED', 'ERRORED'],
  FAILED: [],
  PROCESSED: [],
  PARTIALLY_PROCESSED: [],
  ERRORED: [],
};

export function canTransition(from: StoredRequestStatus, to: StoredRequestStatus): boolean {
  return NEXT_STATUSES[from].includes(to);
}

export function isFinal(s: StoredRequestStatus): boolean {
  return NEXT_STATUSES[s].length === 0;
}

export function assertTransition(from: StoredRequestStatus, to: StoredRequestStatus): void {
  if (!canTransition(from, to)) throw new Error(`A request cannot go from ${from} to ${to}`);
}

/** The final status of a request whose lines all have their outcome. */
export function finalStatusFor(lineStatuses: readonly LineStatus[]): RequestStatus {
  if (lineStatuses.length === 0) throw new Error('A request without lines has no final status');
  if (lineStatuses.includes('PENDING')) throw new Error('A request with PENDING lines has no final status yet');
  const generated = lineStatuses.filter((status) => status === 'GENERATED').length;
  if (generated === lineStatuses.length) return 'PROCESSED';
  return generated === 0 ? 'ERRORED' : 'PARTIALLY_PROCESSED';
}

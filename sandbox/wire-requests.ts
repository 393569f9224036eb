/**
 * Reads the plain requests of fetchIRMDetails, getRequestStatus and fetchEBRCDetails (messages.ts). A message that
 * opened but does not read as its operation's request is refused with ERR03, naming the field: the authority cannot
 * act on it, and it is the caller's construction that is wrong, not the user's input.
 */
import { EnvelopeError } from '../src/authority/protocol/envelope.ts';
import { isoFromDdMMyyyy } from '../src/domain/dates.ts';
import type { EbrcFilters, IrmFilters } from './authority.ts';

type Message = Record<string, unknown>;

export function readIrmFilters(message: Message): IrmFilters {
  return {
    iecCode: requiredText(message, 'iecCode', 'fetchIRMDetails'),
    irmNumber: optionalText(message, 'irmNumber', 'fetchIRMDetails'),
    fromDate: optionalDate(message, 'irmFromDate', 'fetchIRMDetails'),
    toDate: optionalDate(message, 'irmToDate', 'fetchIRMDetails'),
  };
}

export function readRequestId(message: Message): string {
  return requiredText(message, 'requestId', 'getRequestStatus');
}

export function readEbrcFilters(message: Message): EbrcFilters {
  return {
    iecCode: requiredText(message, 'iecCode', 'fetchEBRCDetails'),
    fromDate: optionalDate(message, 'eBRCIssueFromDt', 'fetchEBRCDetails'),
    toDate: optionalDate(message, 'eBRCIssueToDt', 'fetchEBRCDetails'),
    sbCumInvoiceNumber: optionalText(message, 'sbCumInvoiceNumber', 'fetchEBRCDetails'),
    sbCumInvoiceDate: optionalDate(message, 'sbCumInvoiceDate', 'fetchEBRCDetails'),
  };
}

function unreadable(operation: string, field: string, expected: string, value: unknown): EnvelopeError {
  return new EnvelopeError('ERR03', `The ${operation} message's ${field} must be ${expected} (got ${JSON.stringify(value) ?? 'nothing'}).`);
}

function requiredText(message: Message, field: string, operation: string): string {
  const value = message[field];
  if (typeof value !== 'string' || value === '') throw unreadable(operation, field, 'non-empty text', value);
  return value;
}

/** Unused filters come as "" or null, or not at all. */
function optionalText(message: Message, field: string, operation: string): string | null {
  const value = message[field];
  if (value === undefined || value === null || value === '') return null;
  if (typeof value !== 'string') throw unreadable(operation, field, 'text, "" or null', value);
  return value;
}

/** A ddMMyyyy date, as YYYY-MM-DD. */
function optionalDate(message: Message, field: string, operation: string): string | null {
  const value = optionalText(message, field, operation);
  if (value === null) return null;
  const iso = isoFromDdMMyyyy(value);
  if (iso === null) throw unreadable(operation, field, 'a ddMMyyyy date, "" or null', value);
  return iso;
}

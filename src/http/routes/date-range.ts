import { AppError } from '../../errors.ts';

/** fromDate after toDate is a 400 (contract 2); the formats are the schema's. */
export function requireDateRange(query: { fromDate?: string | undefined; toDate?: string | undefined }): void {
  if (query.fromDate && query.toDate && query.fromDate > query.toDate) {
    throw new AppError('validation_failed', `fromDate ${query.fromDate} is after toDate ${query.toDate}.`, {
      errors: [{ path: '/fromDate', code: 'invalid_range', message: 'fromDate must be on or before toDate.' }],
    });
  }
}

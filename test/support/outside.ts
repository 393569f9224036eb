import assert from 'node:assert/strict';
import type { Harness } from './harness.ts';

/**
 * The sandbox's test helpers (contract 13): what the exporter's portal and bank do outside this service. Each posts to
 * the sandbox program and returns what it answered; a refusal fails the test unless `expectStatus` says otherwise.
 */
export async function outside(h: Pick<Harness, 'sandbox'>, path: string, body: Record<string, unknown>, expectStatus?: number): Promise<any> {
  const response = await fetch(`${h.sandbox.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const answer = await response.json();
  if (expectStatus !== undefined) assert.equal(response.status, expectStatus, JSON.stringify(answer));
  else assert.ok(response.ok, `${path}: ${response.status} ${JSON.stringify(answer)}`);
  return answer;
}

export const DEMO_IEC = '0599001001';

export const portalEbrc = (h: Pick<Harness, 'sandbox'>, irmNumber: string, amount: number | string) =>
  outside(h, '/sandbox/portal/ebrcs', { iecCode: DEMO_IEC, irmNumber, amount });
export const cancelEbrcAtPortal = (h: Pick<Harness, 'sandbox'>, ebrcNumber: string) =>
  outside(h, `/sandbox/portal/ebrcs/${ebrcNumber}/cancel`, { iecCode: DEMO_IEC });
export const bankIrm = (h: Pick<Harness, 'sandbox'>, fields: Record<string, unknown>) => outside(h, '/sandbox/bank/irms', { iecCode: DEMO_IEC, ...fields });
export const amendIrmAtBank = (h: Pick<Harness, 'sandbox'>, irmNumber: string, fields: Record<string, unknown>) =>
  outside(h, `/sandbox/bank/irms/${irmNumber}/amend`, { iecCode: DEMO_IEC, ...fields });
export const cancelIrmAtBank = (h: Pick<Harness, 'sandbox'>, irmNumber: string) => outside(h, `/sandbox/bank/irms/${irmNumber}/cancel`, { iecCode: DEMO_IEC });

/** Makes the customer's next refresh pull from the authority, as if the reuse interval had passed. */
export async function expirePull(h: Pick<Harness, 'database'>, customerId: string): Promise<void> {
  await h.database.db.updateTable('platform_customers').set({ irms_pulled_at: new Date(0) }).where('id', '=', customerId).execute();
}

/** The events of a type for the customer, newest first. */
export async function eventsOf(h: Pick<Harness, 'request'>, customerId: string, type: string): Promise<any[]> {
  const answer = await h.request('GET', '/api/v1/events', { query: { platformCustomerId: customerId, type, limit: 100 } });
  assert.equal(answer.status, 200, answer.text);
  return answer.body.items;
}

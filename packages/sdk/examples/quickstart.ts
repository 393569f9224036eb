// From a new customer to eBRC numbers with @ebrc-gateway/sdk.
// Run: EBRC_API_KEY=<your key> npm run example:quickstart   (EBRC_URL defaults to http://localhost:$PORT)
import { createClient, listIrms, waitForFinalStatus, type Irm } from '@ebrc-gateway/sdk';

const client = createClient({
  baseUrl: process.env.EBRC_URL ?? `http://localhost:${process.env.PORT ?? 3000}`,
  apiKey: process.env.EBRC_API_KEY ?? '',
});

// 1. Your exporter, as a customer of your platform (every POST carries an Idempotency-Key on its own).
const { data: customer } = await client.POST('/api/v1/platform-customers/', {
  body: { name: 'Demo', email: `demo+${Date.now()}@example.com`, companyName: 'Demo Exports' },
});

// 2. Its credentials at the trade authority (these are the sandbox's).
await client.POST('/api/v1/platform-customers/{id}/check-authority-credentials', {
  params: { path: { id: customer.id } },
  body: { authorityUsername: 'demo.exporter', authorityPassword: 'Sandbox@123' },
});

// 3. Its inward remittances (IRMs), refreshed from the authority page by page: take two a push may map (unused, not
//    in INR, and not P0101 or P0108, the purpose codes that never make an eBRC: docs/interface.md, "Which IRMs a push
//    can map").
const neverAnEbrc = ['P0101', 'P0108'];
const irms: Irm[] = [];
for await (const irm of listIrms(client, { platformCustomerId: customer.id })) {
  if (irm.irmStatus === 'fresh' && irm.remittanceFCC !== 'INR' && !neverAnEbrc.includes(irm.purposeOfRemittance)) irms.push(irm);
  if (irms.length === 2) break;
}

// 4. Push: map each IRM in full to a shipping bill.
const { data: ack } = await client.POST('/api/v1/genebrc/push-irm', {
  body: {
    platformCustomerId: customer.id,
    recordResCount: irms.length,
    uploadType: '101',
    decalarationFlag: 'Y',
    ebrcBulkGenDtos: irms.map((irm, index) => ({
      serialNo: index + 1,
      uploadType: 101,
      branchSlNo: 0,
      irmIfscCode: irm.ifscCode,
      irmAdCode: irm.remittanceAdCode,
      irmNumber: irm.irmNumber,
      irmDt: irm.irmIssueDate,
      irmFCC: irm.remittanceFCC,
      irmPurposeCode: irm.purposeOfRemittance,
      irmRemitAmtFCC: irm.irmAvailableAmt,
      sbCumInvoiceNumber: String(1001 + index),
      sbCumInvoiceDate: irm.irmIssueDate,
      portCode: 'INDEL4',
      billNo: `B${index + 1}`,
      sbCumInvoiceFCC: irm.remittanceFCC,
      sbCumInvoiceValueinFCC: irm.irmAvailableAmt,
      mappedIRMAmountFCC: irm.irmAvailableAmt,
      isVostro: 'N',
    })),
  },
});
console.log(`pushed ${ack.requestId}: ${ack.ackStatus}`);

// 5. Wait until the authority has decided, then read the eBRC numbers.
const final = await waitForFinalStatus(client, { platformCustomerId: customer.id, requestId: ack.requestId }, { timeoutMs: 120_000, intervalMs: 2_000 });
console.log(`request ${final.requestId}: ${final.status}`);
for (const line of final.ebrcBulkGenStatusList) console.log(`  line ${line.serialNo}: ${line.status} ${line.ebrcNumber ?? ''}`);

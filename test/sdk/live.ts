import type { AddressInfo } from 'node:net';
import { startHarness, type Harness } from '../support/harness.ts';

/** A started harness listening on 127.0.0.1 (a port the system picks), for the SDK to reach over real HTTP. */
export async function liveService(): Promise<Harness & { baseUrl: string; stop(): Promise<void> }> {
  const h = await startHarness('embedded', { env: { WEBHOOK_ALLOW_PRIVATE_URLS: 'true' } });
  try {
    await h.service.app.listen({ port: 0, host: '127.0.0.1' });
  } catch (error) {
    await h.stop();
    throw error;
  }
  const port = (h.service.app.server.address() as AddressInfo).port;
  return Object.assign(h, { baseUrl: `http://127.0.0.1:${port}` });
}

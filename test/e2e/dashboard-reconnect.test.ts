// The dashboard's watch stream when the connection drops, in real Chromium: the page is served
// through a TCP relay the test can cut, as a proxy or a network would. The header says
// Reconnecting…, then Live again, and the table is the fresh list: a server created while the
// page was cut off shows, one deleted meanwhile is gone, without a reload.
import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureWebBuilt, rowOf, UI_WAIT } from '../helpers/dashboard-page.ts';
import { closeBrowser, launchBrowser, withCleanPage } from '../helpers/browser.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

let service: TestService;
let browser: Browser;
let relay: Server;
let relayUrl: string;
const open = new Set<Socket>();
/** While true, new connections are refused (closed at once), as while a network is down. */
let down = false;

beforeAll(async () => {
  ensureWebBuilt();
  service = await startTestService();
  relay = createServer((client) => {
    if (down) return void client.destroy();
    const upstream = connect(service.port, '127.0.0.1');
    for (const socket of [client, upstream]) {
      open.add(socket);
      socket.on('close', () => open.delete(socket));
      socket.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  relayUrl = `http://127.0.0.1:${(relay.address() as AddressInfo).port}`;
  browser = await launchBrowser();
}, 120_000);

afterAll(async () => {
  try {
    await closeBrowser(browser);
    for (const socket of open) socket.destroy();
    await new Promise((resolve) => relay?.close(resolve));
  } finally {
    await service?.stop();
  }
});

describe('the dashboard when its connection drops', () => {
  it('says Reconnecting…, then shows the fresh list once it is back, without a reload', async () => {
    const kept = await service.request('POST', '/servers', { name: 'Kept' });
    const gone = await service.request('POST', '/servers', { name: 'Deleted meanwhile' });
    expect([kept.status, gone.status]).toEqual([201, 201]);
    await withCleanPage(browser, relayUrl, 'reconnect', UI_WAIT, async (watched) => {
      // The cut connections are the browser's to report.
      watched.allowConsoleError(/net::ERR_/);
      const { page } = watched;
      await page.goto(`${relayUrl}/`);
      await page.getByText('Live', { exact: true }).waitFor();
      await rowOf(page, 'Deleted meanwhile').waitFor();
      await page.evaluate(() => ((globalThis as unknown as { __sameDocument: boolean }).__sameDocument = true));

      down = true;
      for (const socket of open) socket.destroy();
      await page.getByText('Reconnecting…', { exact: true }).waitFor();
      expect((await service.request('DELETE', `/servers/${gone.body.id}`)).status).toBe(200);
      expect((await service.request('POST', '/servers', { name: 'Made meanwhile' })).status).toBe(201);
      down = false;

      await page.getByText('Live', { exact: true }).waitFor({ timeout: UI_WAIT * 2 });
      await rowOf(page, 'Made meanwhile').waitFor();
      await rowOf(page, 'Deleted meanwhile').waitFor({ state: 'detached' });
      expect(await rowOf(page, 'Kept').count()).toBe(1);
      expect(await page.evaluate(() => (globalThis as unknown as { __sameDocument?: boolean }).__sameDocument)).toBe(true);
    });
  }, 120_000);
});

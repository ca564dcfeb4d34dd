// A server's page shows its history from the audit trail, in real Chromium against the running
// service: the create made through the API, then a Start clicked on the page, recorded as through
// the dashboard, appear as rows a person reads (who, what, through which door, how it ended).
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeBrowser, launchBrowser, openPage, screenshot } from '../helpers/browser.ts';
import { ensureWebBuilt, UI_WAIT } from '../helpers/dashboard-page.ts';
import { eventually, startTestService, type TestService } from '../helpers/service.ts';

let service: TestService;
let browser: Browser;

beforeAll(async () => {
  ensureWebBuilt();
  service = await startTestService();
  browser = await launchBrowser();
});
afterAll(async () => {
  await closeBrowser(browser);
  await service?.stop();
});

describe('the server page', () => {
  it('lists the server\'s history, and an action taken on the page shows up in it as through the dashboard', async () => {
    const { id } = (await service.request('POST', '/servers', { name: 'Storied' })).body;
    const watched = await openPage(browser, service.url);
    try {
      const { page } = watched;
      await page.goto(`${service.url}/#/servers/${id}`);
      await page.getByRole('heading', { level: 1, name: 'Storied' }).waitFor({ timeout: UI_WAIT });
      const history = page.getByRole('table', { name: 'History' });
      await history.waitFor({ timeout: UI_WAIT });
      const rows = () => history.getByRole('row');
      /** A row as a person reads it: its cells, in order (When, Who, What, Through, Outcome, Detail). */
      const row = async (n: number) => (await rows().nth(n).getByRole('cell').allInnerTexts()).map((t) => t.trim()).slice(1).join(' | ');
      await eventually(async () => (await rows().count()) === 2, UI_WAIT);
      expect(await row(1)).toBe('local | created | API | done | —');

      await page.getByRole('button', { name: 'Start Storied' }).click();
      await eventually(async () => (await rows().count()) === 3, UI_WAIT);
      // Newest first.
      expect(await row(1)).toBe('local | started | dashboard | done | —');
      expect(await row(2)).toBe('local | created | API | done | —');
      await history.scrollIntoViewIfNeeded();
      await screenshot(page, 'server-history');

      const entries = (await service.request('GET', `/servers/${id}/audit`)).body.entries;
      expect(entries.map((e: { action: string; door: string }) => `${e.action} ${e.door}`)).toEqual(['start dashboard', 'create api']);
      watched.assertClean();
    } finally {
      await watched.close();
    }
  }, 120_000);
});

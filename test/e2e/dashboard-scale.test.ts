// The dashboard at the size of a course in real Chromium: 2,500 stopped servers landed as manifest
// files at once. The table keeps only the rows in and near the window in the DOM, yet reads as the
// whole list: scrolling to the end shows the last server, sorting the other way brings it to the
// top, and the filter box finds one server among them all. Found by role and accessible name, as
// web/README.md lists them; nothing here is timed.
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureWebBuilt, rowOf, serversTable, UI_WAIT } from '../helpers/dashboard-page.ts';
import { closeBrowser, launchBrowser, withCleanPage } from '../helpers/browser.ts';
import { eventually, portRange, startTestService, type TestService } from '../helpers/service.ts';

// Code run in the page by evaluate(): the project's tsconfig has no DOM types.
declare const window: any, document: any;

const SERVERS = 2500;
/** Far fewer than the servers: what a window of 800 px shows, and some rows above and below. */
const MAX_ROWS = 100;
const seat = (i: number) => `seat-${String(i).padStart(5, '0')}`;

let service: TestService;
let browser: Browser;

beforeAll(async () => {
  ensureWebBuilt();
  // A port for each server, and no resync every few seconds of thousands of servers at rest.
  service = await startTestService({ config: { ports: portRange(3000), controller: { resyncSeconds: 600 } } });
  await Promise.all(Array.from({ length: SERVERS }, (_, i) => fs.writeFile(
    join(service.settings.manifestsDir, `${seat(i)}.yaml`),
    `apiVersion: devbox.dev/v1alpha1\nkind: EditorServer\nmetadata:\n  name: ${seat(i)}\nspec:\n  running: false\n`,
  )));
  await eventually(async () => (await service.request('GET', '/servers')).body.length === SERVERS, 240_000, 500);
  browser = await launchBrowser();
}, 300_000);

afterAll(async () => {
  try {
    await closeBrowser(browser);
  } finally {
    await service?.stop();
  }
});

const onPage = (label: string, body: (page: Page) => Promise<void>) =>
  withCleanPage(browser, service.url, label, UI_WAIT, (watched) => body(watched.page));

/** Opens the dashboard and waits until it counts every server. */
async function openAll(page: Page): Promise<void> {
  await page.goto(`${service.url}/`);
  await page.getByText('2,500 servers, 0 running').waitFor({ timeout: 60_000 });
}

const rowsInDom = (page: Page) => serversTable(page).getByRole('row').count();

/** Whether the server's link is on screen, within the window's height. */
async function onScreen(page: Page, name: string): Promise<boolean> {
  const box = await page.getByRole('link', { name, exact: true }).boundingBox();
  const height = page.viewportSize()!.height;
  return box !== null && box.y >= 0 && box.y + box.height <= height;
}

describe(`the dashboard with ${SERVERS.toLocaleString('en-US')} servers`, () => {
  it('keeps a bounded number of rows in the DOM, and scrolling to the end shows the last server', async () => {
    await onPage('scale-scroll', async (page) => {
      await openAll(page);
      await rowOf(page, seat(0)).waitFor();
      const rows = await rowsInDom(page);
      expect(rows).toBeGreaterThan(10);
      expect(rows).toBeLessThanOrEqual(MAX_ROWS);
      // Assistive technology is told how many rows the table has, beyond those rendered.
      expect(await serversTable(page).getAttribute('aria-rowcount')).toBe(String(SERVERS + 1));
      expect(await rowOf(page, seat(SERVERS - 1)).count()).toBe(0);

      // The End key of a person reading the page: to the bottom of it.
      await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight));
      await eventually(() => onScreen(page, seat(SERVERS - 1)), UI_WAIT, 50);
      expect(await rowOf(page, seat(0)).count()).toBe(0);
      expect(await rowsInDom(page)).toBeLessThanOrEqual(MAX_ROWS);
      const last = page.getByRole('row').filter({ has: page.getByRole('link', { name: seat(SERVERS - 1), exact: true }) });
      expect(await last.getAttribute('aria-rowindex')).toBe(String(SERVERS + 1));

      // Halfway down, the servers of the middle of the list.
      await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight / 2));
      await eventually(async () => {
        const shown = await serversTable(page).getByRole('link', { name: /^seat-\d+$/ }).allInnerTexts();
        return shown.some((name) => Math.abs(Number(name.slice('seat-'.length)) - SERVERS / 2) < 100);
      }, UI_WAIT, 50);
      expect(await rowsInDom(page)).toBeLessThanOrEqual(MAX_ROWS);

      // Sorted the other way, the last server is the first row, at the top of the page.
      await page.evaluate(() => window.scrollTo(0, 0));
      await serversTable(page).getByRole('button', { name: 'Name' }).click();
      await rowOf(page, seat(SERVERS - 1)).waitFor();
      const first = await serversTable(page).getByRole('row').nth(1).getByRole('link').first().innerText();
      expect(first).toBe(seat(SERVERS - 1));
    });
  }, 120_000);

  it('finds one server among them all by typing its name in the filter box', async () => {
    await onPage('scale-filter', async (page) => {
      await openAll(page);
      const wanted = seat(1234);
      await page.getByRole('searchbox', { name: 'Filter servers' }).pressSequentially(wanted);
      await page.getByText(`1 of 2,500 servers match`).waitFor();
      await eventually(async () => (await rowsInDom(page)) === 2, UI_WAIT, 50);
      expect(await rowOf(page, wanted).count()).toBe(1);
      expect(await onScreen(page, wanted)).toBe(true);

      // Cleared, the table is the whole list again, still a window of it.
      await page.getByRole('searchbox', { name: 'Filter servers' }).fill('');
      await page.getByText('2,500 servers, 0 running').waitFor();
      await rowOf(page, seat(0)).waitFor();
      expect(await rowsInDom(page)).toBeLessThanOrEqual(MAX_ROWS);
    });
  }, 120_000);
});

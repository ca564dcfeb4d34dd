// The servers table at the window sizes people use (the common laptops, a desktop, a phone), in
// real Chromium: the action a person came for (Open a running editor, Start a stopped one) is on
// screen without scrolling sideways, the other actions are one keyboard-operable menu away, and
// servers that share a display name can be told apart wherever a person picks one.
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeBrowser, launchBrowser, withCleanPage, screenshot, type WatchedPage } from '../helpers/browser.ts';
import { eventually, startTestService, type TestService } from '../helpers/service.ts';

// Code run in the page by evaluate(): the project's tsconfig has no DOM types.
declare const window: any, document: any;

const ROOT = resolve(new URL('../..', import.meta.url).pathname);
const UI_WAIT = 20_000;
const SIZES = [
  { width: 1280, height: 800 },
  { width: 1366, height: 768 },
  { width: 1920, height: 1080 },
  { width: 420, height: 800 },
];

let service: TestService;
let browser: Browser;
/** The fleet, by display name (the two Hellos by manifest name). */
const fleet: Record<string, any> = {};

async function create(name: string, start: boolean, extensions: string[] = []): Promise<any> {
  const created = await service.request('POST', '/servers', { name, extensions });
  expect(created.status).toBe(201);
  if (start) expect((await service.request('POST', `/servers/${created.body.id}/start`)).status).toBe(200);
  return (await service.request('GET', `/servers/${created.body.id}`)).body;
}

const api = async (id: string) => (await service.request('GET', `/servers/${id}`)).body;

beforeAll(async () => {
  if (!existsSync(join(ROOT, 'dist', 'web', 'index.html'))) throw new Error('dist/web/index.html is missing: run npm run build:web (npm test does it first)');
  service = await startTestService();
  // Running, stopped, failed, being prepared, a long name, and two servers both named Hello.
  fleet.Alpha = await create('Alpha', true);
  fleet.Beta = await create('Beta', false);
  fleet.Gamma = await create('Gamma', true);
  fleet.long = await create('Customer analytics notebook', true);
  fleet.hello = await create('Hello', true);
  fleet['hello-2'] = await create('Hello', false);
  // Delta's extension install never ends (the stub's knob): it stays in phase Provisioning.
  process.env.STUB_HANG_INSTALL_OF = 'acme.slow';
  try {
    fleet.Delta = await create('Delta', false, ['acme.slow']);
  } finally {
    delete process.env.STUB_HANG_INSTALL_OF;
  }
  // Gamma crashes (restart policy Never): failed, with its reason beside the status word.
  process.kill(fleet.Gamma.pid, 'SIGKILL');
  await eventually(async () => (await api(fleet.Gamma.id)).status === 'failed', 30_000);
  // The sampler fills CPU, memory and uptime in, so the columns are as wide as they get.
  await eventually(async () => (await api(fleet.Alpha.id)).memory_mb > 0, 15_000);
  browser = await launchBrowser();
}, 180_000);

afterAll(async () => {
  try {
    await closeBrowser(browser);
    // Deleting Delta ends its hanging installer.
    if (fleet.Delta) await service.request('DELETE', `/servers/${fleet.Delta.id}`);
  } finally {
    await service?.stop();
  }
});

/** Runs `body` on a fresh page of this size; afterwards the page must be clean. */
async function onPage(label: string, viewport: { width: number; height: number }, body: (page: Page, w: WatchedPage) => Promise<void>) {
  return withCleanPage(browser, service.url, label, UI_WAIT, (watched) => body(watched.page, watched), { viewport });
}

const serversTable = (page: Page) => page.getByRole('table', { name: 'Servers' });
const rowOf = (page: Page, name: string) =>
  serversTable(page).getByRole('row').filter({ has: page.getByRole('link', { name, exact: true }) });

/** The table is filled in and the sampler's figures are in (memory shown for every running editor). */
async function tableSettled(page: Page): Promise<void> {
  const rows = serversTable(page).getByRole('row');
  await eventually(async () => (await rows.count()) === 1 + Object.keys(fleet).length, UI_WAIT);
  await rowOf(page, 'Gamma').getByText('failed').waitFor();
  await eventually(async () => !/—/.test((await rowOf(page, 'Alpha').getByRole('cell').nth(6).textContent()) ?? '—'), UI_WAIT);
}

/**
 * True when the element is wholly inside the window and is what a person sees there: the top
 * element at its centre is it (not clipped by a scrolling box, not covered by another cell).
 */
async function onScreen(locator: Locator): Promise<{ inside: boolean; hit: boolean; box: unknown; viewport: unknown }> {
  return locator.evaluate((el: any) => {
    const r = el.getBoundingClientRect();
    const inside = r.width > 0 && r.left >= 0 && r.top >= 0 && r.right <= window.innerWidth && r.bottom <= window.innerHeight;
    const top = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    return { inside, hit: top !== null && (top === el || el.contains(top)), box: r.toJSON(), viewport: [window.innerWidth, window.innerHeight] };
  });
}

async function expectOnScreen(locator: Locator, what: string): Promise<void> {
  const seen = await onScreen(locator);
  expect(seen.inside && seen.hit, `${what} is on screen: ${JSON.stringify(seen)}`).toBe(true);
}

/** How far the page, and the servers table's own box, could scroll sideways. */
async function sideways(page: Page): Promise<{ page: number; table: number; innerWidth: number }> {
  const box = page.getByRole('group', { name: 'Servers table' });
  const table = await box.evaluate((el: any) => el.scrollWidth - el.clientWidth);
  const overflow = await page.evaluate(() => document.scrollingElement.scrollWidth - window.innerWidth);
  return { page: overflow, table, innerWidth: await page.evaluate(() => window.innerWidth) };
}

describe('the servers table at common window sizes', () => {
  for (const size of SIZES) {
    const label = `${size.width}x${size.height}`;

    it(`at ${label}: Open and Start are on screen without scrolling sideways, the rest in a menu`, async () => {
      await onPage(`layout-${label}`, size, async (page) => {
        await page.goto(`${service.url}/`);
        await tableSettled(page);

        // The page never scrolls sideways; at 1280 px and wider, neither does the table's box.
        const scroll = await sideways(page);
        expect(scroll.page, `the page scrolls sideways at ${label}`).toBeLessThanOrEqual(0);
        if (size.width >= 1280) expect(scroll.table, `the servers table overflows its box at ${label}`).toBeLessThanOrEqual(0);

        // The action a person came for, in each state.
        await expectOnScreen(page.getByRole('link', { name: 'Open Alpha', exact: true }), 'Open Alpha');
        await expectOnScreen(page.getByRole('link', { name: 'Open Customer analytics notebook', exact: true }), 'Open Customer analytics notebook');
        await expectOnScreen(page.getByRole('button', { name: 'Start Beta', exact: true }), 'Start Beta');
        await expectOnScreen(page.getByRole('button', { name: 'Start Gamma', exact: true }), 'Start Gamma (failed)');
        expect(await page.getByRole('link', { name: 'Open Alpha', exact: true }).getAttribute('href')).toMatch(new RegExp(`(^|/)vscode/${fleet.Alpha.port}/$`));
        await screenshot(page, `dashboard-layout-${label}`);

        // The rest, through the keyboard: Enter opens the menu on its first item, the arrows move,
        // Escape closes it and gives focus back to its button.
        const more = page.getByRole('button', { name: 'More actions for Alpha', exact: true });
        await expectOnScreen(more, 'More actions for Alpha');
        expect(await more.getAttribute('aria-haspopup')).toBe('menu');
        await more.focus();
        await page.keyboard.press('Enter');
        const menu = page.getByRole('menu', { name: 'More actions for Alpha', exact: true });
        await menu.waitFor();
        await eventually(async () => (await more.getAttribute('aria-expanded')) === 'true', UI_WAIT);
        const items = menu.getByRole('menuitem');
        expect(await items.allInnerTexts()).toEqual(['Stop', 'Restart', 'Refresh', 'Logs', 'Delete…']);
        for (const item of await items.all()) await expectOnScreen(item, `menu item ${await item.innerText()}`);
        const focusedText = () => page.evaluate(() => document.activeElement?.textContent?.trim());
        await eventually(async () => (await focusedText()) === 'Stop', UI_WAIT);
        await page.keyboard.press('ArrowDown');
        expect(await focusedText()).toBe('Restart');
        await page.keyboard.press('End');
        expect(await focusedText()).toBe('Delete…');
        await page.keyboard.press('ArrowDown');
        expect(await focusedText()).toBe('Stop');
        await screenshot(page, `dashboard-layout-${label}-menu`);
        await page.keyboard.press('Escape');
        await menu.waitFor({ state: 'hidden' });
        await eventually(() => more.evaluate((el: any) => el === document.activeElement), UI_WAIT);
        // The popover hides at once; the button's state follows at the next render.
        await eventually(async () => (await more.getAttribute('aria-expanded')) === 'false', UI_WAIT);

        // A menu item does its action: Refresh of the stopped Beta, by pointer this time.
        await page.getByRole('button', { name: 'More actions for Beta', exact: true }).click();
        const betaMenu = page.getByRole('menu', { name: 'More actions for Beta', exact: true });
        expect(await betaMenu.getByRole('menuitem').allInnerTexts()).toEqual(['Refresh', 'Logs', 'Delete…']);
        const [answer] = await Promise.all([
          page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname.endsWith(`/servers/${fleet.Beta.id}/refresh-status`)),
          betaMenu.getByRole('menuitem', { name: 'Refresh' }).click(),
        ]);
        expect(answer.status()).toBe(200);
        await betaMenu.waitFor({ state: 'hidden' });
        await page.getByRole('status', { name: 'Notifications' }).getByText(/Refreshed Beta/).waitFor();

        // Logs is a menu item too, and leads to the server's logs.
        await page.getByRole('button', { name: 'More actions for Beta', exact: true }).click();
        await betaMenu.getByRole('menuitem', { name: 'Logs' }).click();
        await page.getByRole('heading', { level: 1, name: 'Logs' }).waitFor();
        expect(page.url()).toContain(`#/logs/${fleet.Beta.id}`);
      });
    }, 90_000);
  }

  it('shows the progress of a server being prepared, whose status word is the interface\'s', async () => {
    const delta = await api(fleet.Delta.id);
    expect(delta.phase).toBe('Provisioning');
    expect(delta.reason).toBe('InstallingExtensions');
    await onPage('preparing', SIZES[0]!, async (page) => {
      await page.goto(`${service.url}/`);
      await tableSettled(page);
      // The row: the API's status word first, then what the controller is doing.
      const status = rowOf(page, 'Delta').getByRole('cell').nth(1);
      await eventually(async () => {
        const text = ((await status.textContent()) ?? '').replace(/\s+/g, ' ').replace(/^[^a-z]+/i, '');
        return text.startsWith(delta.status) && text.includes('preparing') && text.includes('InstallingExtensions');
      }, UI_WAIT);
      // Its page: a progress bar, whatever the status word says.
      await page.getByRole('link', { name: 'Delta', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Delta', exact: true }).waitFor();
      await page.getByRole('progressbar', { name: 'Provisioning' }).waitFor();
      await screenshot(page, 'dashboard-preparing');
    });
  }, 60_000);

  it('tells two servers named Hello apart in the table, on their pages and in the logs view', async () => {
    const hello = await api(fleet.hello.id);
    const hello2 = await api(fleet['hello-2'].id);
    expect([hello.name, hello2.name]).toEqual(['Hello', 'Hello']);
    expect([hello.manifest, hello2.manifest]).toEqual(['hello', 'hello-2']);
    const first = 'Hello (hello)';
    const second = 'Hello (hello-2)';

    for (const size of [SIZES[0]!, SIZES[3]!]) {
      await onPage(`hello-${size.width}`, size, async (page) => {
        await page.goto(`${service.url}/`);
        await tableSettled(page);
        // Each row's name link says which one it is, and leads to that server.
        const links = serversTable(page).getByRole('link', { name: /^Hello/ });
        expect(await links.allInnerTexts().then((t) => t.length)).toBe(2);
        expect(await page.getByRole('link', { name: first, exact: true }).getAttribute('href')).toBe(`#/servers/${hello.id}`);
        expect(await page.getByRole('link', { name: second, exact: true }).getAttribute('href')).toBe(`#/servers/${hello2.id}`);
        // A name nobody else has stays as it is.
        await page.getByRole('link', { name: 'Alpha', exact: true }).waitFor();
        // Their actions are named apart too: Open the running one, Start the stopped one.
        await expectOnScreen(page.getByRole('link', { name: `Open ${first}`, exact: true }), `Open ${first}`);
        await expectOnScreen(page.getByRole('button', { name: `Start ${second}`, exact: true }), `Start ${second}`);
        expect(await page.getByRole('link', { name: `Open ${second}`, exact: true }).count()).toBe(0);
        for (const label of [first, second]) expect(await page.getByRole('button', { name: `More actions for ${label}`, exact: true }).count()).toBe(1);
        if (size.width === 1280) await screenshot(page, 'dashboard-same-names');
      });
    }

    await onPage('hello-pages', SIZES[0]!, async (page) => {
      await page.goto(`${service.url}/`);
      await tableSettled(page);
      // The server page's heading names the one followed.
      await page.getByRole('link', { name: second, exact: true }).click();
      await page.getByRole('heading', { level: 1, name: second, exact: true }).waitFor();
      expect(page.url()).toContain(`#/servers/${hello2.id}`);
      await page.getByRole('button', { name: `Start ${second}`, exact: true }).waitFor();
      await page.getByRole('region', { name: 'Manifest' }).getByText('name: hello-2').waitFor();
      await screenshot(page, 'dashboard-same-names-page');
      await page.goto(`${service.url}/#/servers/${hello.id}`);
      await page.getByRole('heading', { level: 1, name: first, exact: true }).waitFor();
      await page.getByRole('button', { name: `Stop ${first}`, exact: true }).waitFor();

      // The logs view's Server selector offers both, named apart; choosing one follows its id.
      await page.goto(`${service.url}/#/logs`);
      const select = page.getByRole('combobox', { name: 'Server' });
      await eventually(async () => (await select.getByRole('option').count()) === 1 + Object.keys(fleet).length, UI_WAIT);
      const options = await select.getByRole('option').allInnerTexts();
      expect(options.filter((o) => o.startsWith('Hello'))).toEqual([first, second]);
      expect(new Set(options).size).toBe(options.length);
      await select.selectOption({ label: second });
      await eventually(() => page.url().endsWith(`#/logs/${hello2.id}`), UI_WAIT);
      await page.getByText(`Live: ${second}`).waitFor();
      await select.selectOption({ label: first });
      await eventually(() => page.url().endsWith(`#/logs/${hello.id}`), UI_WAIT);
      // All servers' lines name each Hello apart as well.
      await select.selectOption({ label: 'All servers' });
      const lines = page.getByRole('log', { name: 'Log lines' });
      await eventually(async () => ((await lines.textContent()) ?? '').includes(first), UI_WAIT);
      await screenshot(page, 'dashboard-same-names-logs');
    });

    // Once the names differ again, each shows alone.
    expect((await service.request('DELETE', `/servers/${hello2.id}`)).status).toBeLessThan(300);
    await onPage('hello-alone', SIZES[0]!, async (page) => {
      await page.goto(`${service.url}/`);
      await page.getByRole('link', { name: 'Hello', exact: true }).waitFor();
      expect(await page.getByRole('link', { name: first, exact: true }).count()).toBe(0);
    });
  }, 120_000);
});

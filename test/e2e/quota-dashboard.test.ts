// Quotas per person in the dashboard, in real Chromium against the running service with identity
// required: a start over the person's quota shows the service's refusal, naming the limit and the
// servers using it, and the health view's Capacity card shows each person's use against the limits.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeBrowser, launchBrowser, openPage, screenshot } from '../helpers/browser.ts';
import { eventually, processExists, runningEditors, startTestService, type TestService } from '../helpers/service.ts';

const ROOT = resolve(new URL('../..', import.meta.url).pathname);
const UI_WAIT = 20_000;
const ALICE = { 'X-Forwarded-Email': 'alice@example.com', 'X-Forwarded-User': '1001@42' };
const BOB = { 'X-Forwarded-Email': 'bob@example.com', 'X-Forwarded-User': '1002@42' };

let service: TestService;
let browser: Browser;

beforeAll(async () => {
  if (!existsSync(join(ROOT, 'dist', 'web', 'index.html'))) execFileSync('npm', ['run', 'build:web', '--silent'], { cwd: ROOT, stdio: 'inherit' });
  service = await startTestService({
    requireIdentity: true,
    config: { capacity: { maxMemoryMb: 0, perPerson: { runningEditors: 1, servers: 3, memoryMb: 0 } } },
  });
  browser = await launchBrowser();
});
afterAll(async () => {
  await closeBrowser(browser);
  await service?.stop();
});

const live = () => runningEditors(service.settings.dataDir).filter((e) => processExists(e.identity.pid)).map((e) => e.name).sort();

describe('the dashboard with quotas per person', () => {
  it('shows the refusal of a start over the quota, and each person\'s use against the limits', async () => {
    const create = async (who: Record<string, string>, name: string) => {
      const created = await service.request('POST', '/servers', { name }, who);
      expect(created.status).toBe(201);
      return created.body.id as string;
    };
    const first = await create(ALICE, 'api-1');
    await create(ALICE, 'api-2');
    expect((await service.request('POST', `/servers/${first}/start`, undefined, ALICE)).status).toBe(200);
    await create(BOB, 'bobs');

    const watched = await openPage(browser, service.url);
    try {
      const { page, context } = watched;
      // The platform's front proxy signs Alice in: every request of hers carries her identity.
      await context.setExtraHTTPHeaders(ALICE);
      // Chromium reports the 409 in the console; the page shows it as the service said it.
      watched.allowConsoleError(/Failed to load resource: the server responded with a status of 409/);
      await page.goto(`${service.url}/#/`);
      const start = page.getByRole('button', { name: 'Start api-2' });
      await start.waitFor({ timeout: UI_WAIT });
      await start.click();
      const alert = page.getByRole('alert');
      await alert.waitFor({ timeout: UI_WAIT });
      const said = 'server "api-2" was not started: alice@example.com runs 1 of 1 editors allowed per person (capacity.perPerson.runningEditors): api-1; stop one first';
      await eventually(async () => (await alert.innerText()).includes(said), UI_WAIT);
      await screenshot(page, 'quota-refused');
      expect(live()).toEqual(['api-1']);

      await page.goto(`${service.url}/#/health`);
      const table = page.getByRole('table', { name: 'Use per person' });
      await table.waitFor({ timeout: UI_WAIT });
      const card = page.getByRole('region', { name: 'Capacity' });
      expect(await card.innerText()).toContain('Limits per person: 1 editor running, 3 servers (capacity.perPerson); admins are exempt.');
      const rows = table.getByRole('row');
      await eventually(async () => (await rows.count()) === 3, UI_WAIT);
      const alice = (await table.getByRole('row', { name: /alice@example\.com/ }).innerText()).split('\t').map((s) => s.trim());
      expect(alice.slice(0, 3)).toEqual(['alice@example.com', '1 of 1', '2 of 3']);
      expect(alice[3]).toMatch(/^[1-9][\d.]* MB$/);
      const bob = (await table.getByRole('row', { name: /bob@example\.com/ }).innerText()).split('\t').map((s) => s.trim());
      expect(bob).toEqual(['bob@example.com', '0 of 1', '1 of 3', '0.0 MB']);
      await screenshot(page, 'quota-health');
      watched.assertClean();
    } finally {
      await watched.close();
    }
  });
});

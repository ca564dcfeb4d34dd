// The dashboard shows used and free capacity, in real Chromium against the running service:
// the servers view's one-line summary and the health view's Capacity card, with the figures
// GET /health and the live editors give.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeBrowser, launchBrowser, openPage, screenshot } from '../helpers/browser.ts';
import { eventually, runningEditors, startTestService, type TestService } from '../helpers/service.ts';

const ROOT = resolve(new URL('../..', import.meta.url).pathname);
const UI_WAIT = 20_000;

let service: TestService;
let browser: Browser;

beforeAll(async () => {
  if (!existsSync(join(ROOT, 'dist', 'web', 'index.html'))) execFileSync('npm', ['run', 'build:web', '--silent'], { cwd: ROOT, stdio: 'inherit' });
  service = await startTestService({ config: { capacity: { maxRunning: 3, maxMemoryMb: 2000, whenFull: 'refuse', idleAfterSeconds: 60 } } });
  browser = await launchBrowser();
});
afterAll(async () => {
  await closeBrowser(browser);
  await service?.stop();
});

describe('the dashboard', () => {
  it('shows how many editors run of the limit and the memory used and free', async () => {
    for (const name of ['alpha', 'beta']) {
      const { id } = (await service.request('POST', '/servers', { name })).body;
      expect((await service.request('POST', `/servers/${id}/start`)).status).toBe(200);
    }
    expect(runningEditors(service.settings.dataDir)).toHaveLength(2);
    const watched = await openPage(browser, service.url);
    try {
      const { page } = watched;
      await page.goto(`${service.url}/#/`);
      const summary = page.getByRole('note', { name: 'Capacity' });
      await summary.waitFor({ timeout: UI_WAIT });
      const line = /^Capacity: 2 of 3 editors running, [1-9][\d.]* MB of 2\.0 GB memory used \([\d.]+ (MB|GB) free\)$/;
      await eventually(async () => line.test(await summary.innerText()), UI_WAIT);
      await screenshot(page, 'capacity-servers');
      // Still so after the page re-rendered with the service's figures.
      expect(await summary.innerText()).toMatch(line);

      await page.goto(`${service.url}/#/health`);
      const card = page.getByRole('region', { name: 'Capacity' });
      await card.waitFor({ timeout: UI_WAIT });
      const figures = (await service.request('GET', '/health')).body.capacity;
      // Terms are upper-cased by the style sheet only.
      const text = (await card.innerText()).toLowerCase();
      expect(text).toContain('editors running\n2 of 3');
      expect(text).toMatch(/memory free\n[\d.]+ (mb|gb) of 2\.0 gb/);
      expect(text).toContain('when full\nrefuse the start');
      expect(text).toContain(`memory limit\n${figures.memory_limit_source.toLowerCase()}`);
      await screenshot(page, 'capacity-health');
      watched.assertClean();
    } finally {
      await watched.close();
    }
  });
});

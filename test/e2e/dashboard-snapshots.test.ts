// The server page with a persistence target, in real Chromium: where the server's work is kept
// (its last snapshot, files, size) and "Keep now", which takes a snapshot the target then holds.
import { existsSync, promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeBrowser, launchBrowser, openPage, screenshot } from '../helpers/browser.ts';
import { eventually, startTestService, type TestService } from '../helpers/service.ts';

const ROOT = resolve(new URL('../..', import.meta.url).pathname);
const UI_WAIT = 20_000;

let service: TestService;
let browser: Browser;
let keep: string;

beforeAll(async () => {
  if (!existsSync(join(ROOT, 'dist', 'web', 'index.html'))) throw new Error('dist/web/index.html is missing: run npm run build:web (npm test does it first)');
  keep = await fs.mkdtemp(join(tmpdir(), 'devbox-e2e-keep-'));
  service = await startTestService({ persistTo: keep });
  browser = await launchBrowser();
});
afterAll(async () => {
  await closeBrowser(browser);
  await service?.stop();
  await fs.rm(keep, { recursive: true, force: true });
});

const indexes = async () => (await fs.readdir(join(keep, 'servers', 'notes', 'snapshots')).catch(() => [])).filter((f) => f.endsWith('.json'));

describe('the server page with a persistence target', () => {
  it('shows where the work is kept, and Keep now takes a snapshot', async () => {
    const created = await service.request('POST', '/servers', { name: 'Notes' });
    await fs.writeFile(join(created.body.workspace_path, 'todo.md'), '- keep this\n');
    expect(await indexes()).toEqual([]);
    const watched = await openPage(browser, service.url);
    try {
      const { page } = watched;
      await page.goto(`${service.url}/#/servers/${created.body.id}`);
      const section = page.getByRole('region', { name: 'Snapshots' });
      await section.waitFor({ timeout: UI_WAIT });
      await page.getByRole('button', { name: "Keep Notes's work now" }).click();
      await page.getByText(/snapshot .* of server "Notes" kept/).waitFor({ timeout: UI_WAIT });
      expect(await indexes()).toHaveLength(1);
      // The record's persistence state reaches the page through the watch stream.
      await eventually(async () => !/last snapshot\s*—/i.test(await section.innerText()), UI_WAIT);
      expect(await section.innerText(), await section.innerText()).toMatch(/files\s*[1-9]/i);
      await screenshot(page, 'dashboard-server-snapshots', { fullPage: true });
      watched.assertClean();
    } finally {
      await watched.close();
    }
  });
});

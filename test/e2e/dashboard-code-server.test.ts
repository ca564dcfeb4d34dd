// Once with the real code-server: through the dashboard a person creates a server, starts it,
// follows its "Open {name}" link and gets the VS Code workbench in a new tab, through the
// service's proxy on its own address.
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveEditorBinary } from '../../src/runtime/editor-binary.ts';
import { closeBrowser, launchBrowser, openPage, screenshot } from '../helpers/browser.ts';
import { eventually, processExists, startTestService, type TestService } from '../helpers/service.ts';

// Code run in the page by waitForFunction(): the project's tsconfig has no DOM types.
declare const document: any;

const ROOT = resolve(new URL('../..', import.meta.url).pathname);

let service: TestService;
let browser: Browser;

beforeAll(async () => {
  if (!existsSync(join(ROOT, 'dist', 'web', 'index.html'))) throw new Error('dist/web/index.html is missing: run npm run build:web (npm test does it first)');
  service = await startTestService({
    editorBin: resolveEditorBinary().path,
    config: { editor: { startTimeoutSeconds: 60, readyTimeoutSeconds: 60, stopGraceSeconds: 5 } },
  });
  browser = await launchBrowser();
}, 120_000);
afterAll(async () => {
  try {
    await closeBrowser(browser);
  } finally {
    await service?.stop();
  }
});

describe('the dashboard with the real code-server', () => {
  it('creates and starts a server, and its Open link shows the VS Code workbench in a new tab', async () => {
    const watched = await openPage(browser, service.url);
    const { page } = watched;
    page.setDefaultTimeout(30_000);
    try {
      await page.goto(`${service.url}/`);
      await page.getByRole('button', { name: 'New server' }).first().click();
      const dialog = page.getByRole('dialog', { name: 'New server' });
      await dialog.getByRole('textbox', { name: 'Name' }).fill('Workbench');
      // No extension groups: their installs would go to the marketplace, off this machine.
      const groups = dialog.getByRole('group', { name: 'Extension groups' }).getByRole('checkbox');
      for (const box of await groups.all()) await box.setChecked(false);
      await dialog.getByRole('checkbox', { name: 'Start when created' }).setChecked(false);
      await dialog.getByRole('button', { name: 'Create' }).click();
      await dialog.waitFor({ state: 'hidden' });

      const row = page.getByRole('table', { name: 'Servers' }).getByRole('row').filter({ has: page.getByRole('link', { name: 'Workbench', exact: true }) });
      await row.waitFor();
      await row.getByRole('button', { name: 'Start Workbench' }).click();
      const open = page.getByRole('link', { name: 'Open Workbench' });
      await open.waitFor({ timeout: 90_000 });
      const server = (await service.request('GET', '/servers')).body.find((s: { name: string }) => s.name === 'Workbench');
      expect(server.status).toBe('running');
      expect(processExists(server.pid)).toBe(true);

      const [tab] = await Promise.all([page.context().waitForEvent('page'), open.click()]);
      await tab.waitForLoadState('domcontentloaded');
      // The link opened the editor through the service's proxy (code-server may add ?folder=…).
      expect(tab.url().startsWith(`${service.url}/vscode/${server.port}/`)).toBe(true);
      await tab.waitForSelector('.monaco-workbench', { timeout: 90_000 });
      await tab.waitForSelector('.part.activitybar', { timeout: 60_000 });
      // The tab is named by the workspace folder, which is the manifest name ("workbench -
      // code-server"): unique, so servers sharing a display name open tabs named apart, by the
      // same name the dashboard shows beside theirs.
      expect(server.manifest).toBe('workbench');
      await eventually(async () => (await tab.title()).split(' - ').includes(server.manifest), 30_000);
      // Usable before the screenshot: the Explorer shows the opened folder (what bench/workbench.ts waits for;
      // a startup editor tab and idle progress bars are not reliable: code-server does not always open one).
      await tab.waitForSelector('.part.sidebar .explorer-folders-view', { timeout: 60_000 });
      await screenshot(tab, 'dashboard-open-workbench');
      // code-server saw the browser attach.
      await eventually(async () => ((await fetch(`http://127.0.0.1:${server.port}/healthz`).then((r) => r.json())) as { status: string }).status === 'alive', 20_000);

      // Nothing the dashboard or the editor's tab asked for left the service's address. The
      // workbench's own console messages are code-server's, not the dashboard's: reported, not judged.
      if (watched.otherTabErrors.length > 0) console.log(`the editor tab's console errors (code-server's own):\n${watched.otherTabErrors.join('\n')}`);
      watched.assertClean({ otherTabs: false });
    } catch (error) {
      await screenshot(page, 'failed-dashboard-code-server').catch(() => undefined);
      throw error;
    } finally {
      await watched.close();
    }
    // The editor tab's requests went through the proxy on the service's own host.
    expect(watched.requests.some((r) => r.includes(`${service.url}/vscode/`))).toBe(true);
  }, 300_000);
});

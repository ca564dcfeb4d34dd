// The dashboard in real Chromium against the running service with the stub editor: each flow a
// person goes through, end to end through the page, checked both on the page (found by role and
// accessible name, as web/README.md lists them) and in the real outcome (the API's state, files
// on disk, processes alive or gone). Every page must stay on the service's own address and raise
// no console or page error. Screenshots of the main views go to ARTIFACTS_DIR.
import { existsSync, promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import AdmZip from 'adm-zip';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { cellOf, clickAndAwait, ensureWebBuilt, menuItem, rowOf, serversTable, statusShows, textOf, UI_WAIT } from '../helpers/dashboard-page.ts';
import { ARTIFACTS, closeBrowser, launchBrowser, screenshot, withCleanPage, type PageOptions, type WatchedPage } from '../helpers/browser.ts';
import { eventually, processExists, startTestService, STUB_EDITOR, type TestService } from '../helpers/service.ts';
import { writeTemplate, writeWhole } from '../templates/fixtures.ts';
import { makeRepo, serveGitDaemon, type GitDaemon } from '../workspace/git-fixtures.ts';

// Code run in the page by evaluate(): the project's tsconfig has no DOM types.
declare const window: any, document: any, MutationObserver: any, getComputedStyle: any;

const ROOT = resolve(new URL('../..', import.meta.url).pathname);
const UPDATE_SCREENSHOTS = process.env.DEVBOX_UPDATE_SCREENSHOTS === '1';

let service: TestService;
let browser: Browser;
let daemon: GitDaemon;
let repos: string;
let templatesDir: string;

beforeAll(async () => {
  ensureWebBuilt();
  repos = await fs.mkdtemp(join(tmpdir(), 'devbox-dashboard-repos-'));
  await makeRepo(repos, 'starter');
  daemon = await serveGitDaemon(repos);
  const root = await fs.mkdtemp(join(tmpdir(), 'devbox-dashboard-'));
  templatesDir = join(root, 'templates');
  await fs.mkdir(templatesDir, { recursive: true });
  await writeTemplate(templatesDir, 'git-starter', {
    name: 'Git starter', tab: 'Starters', description: 'A project cloned from git, with the git tools',
    spec: { extensionGroups: ['git'], workspace: { source: { git: { url: daemon.url('starter'), ref: 'feature' } } } },
  });
  await writeTemplate(templatesDir, 'blank-python', {
    name: 'Blank Python', tab: 'Starters', description: 'An empty workspace with the Python extensions',
    spec: { extensionGroups: ['python'] },
  });
  await writeTemplate(templatesDir, 'notebooks', {
    name: 'Notebooks', tab: 'Data', description: 'Jupyter notebooks for data exploration',
    spec: { extensionGroups: ['jupyter'] },
  });
  service = await startTestService({ root, templatesDir });
  browser = await launchBrowser();
}, 180_000);

afterAll(async () => {
  try {
    await closeBrowser(browser);
  } finally {
    await service?.stop();
    await daemon?.stop();
    if (repos) await fs.rm(repos, { recursive: true, force: true });
  }
});

// ---------------------------------------------------------------------------------------------
// Helpers: pages, the table, the API's view.

/** Runs `body` on a fresh page; afterwards the page must be clean (no off-host request, no error). */
async function onPage(label: string, body: (w: WatchedPage, page: Page) => Promise<void>, options: PageOptions = {}): Promise<void> {
  return withCleanPage(browser, service.url, label, UI_WAIT, (watched) => body(watched, watched.page), options);
}

const home = (hash = '') => `${service.url}/${hash}`;

/** Opens the dashboard and marks the document, so a later check can tell it was never reloaded. */
async function openDashboard(page: Page, hash = ''): Promise<void> {
  await page.goto(home(hash));
  await page.evaluate(() => ((window as unknown as { __sameDocument: boolean }).__sameDocument = true));
}
async function notReloaded(page: Page): Promise<boolean> {
  return page.evaluate(() => (window as unknown as { __sameDocument?: boolean }).__sameDocument === true);
}

async function servers(): Promise<any[]> {
  const { status, body } = await service.request('GET', '/servers');
  expect(status).toBe(200);
  return body;
}
async function serverNamed(name: string): Promise<any> {
  const found = (await servers()).find((s) => s.name === name);
  if (!found) throw new Error(`no server named ${name}`);
  return found;
}
const manifestPath = (file: string) => join(service.settings.manifestsDir, file);

/** Opens the New server dialog from the servers view. */
async function openNewServer(page: Page): Promise<Locator> {
  await page.getByRole('button', { name: 'New server' }).first().click();
  const dialog = page.getByRole('dialog', { name: 'New server' });
  await dialog.waitFor();
  return dialog;
}

/** Fills the New server dialog's name and leaves "Start when created" off. */
async function fillNewServer(dialog: Locator, name: string): Promise<void> {
  await dialog.getByRole('textbox', { name: 'Name' }).fill(name);
  await dialog.getByRole('checkbox', { name: 'Start when created' }).setChecked(false);
}

const logLines = (page: Page) => page.getByRole('log', { name: 'Log lines' });
const count = (text: string, needle: string) => text.split(needle).length - 1;

// ---------------------------------------------------------------------------------------------

describe('the dashboard', () => {
  it('serves the page at / and, with no servers, says what to do next', async () => {
    await onPage('empty', async (w, page) => {
      const response = await page.goto(home());
      expect(response?.status()).toBe(200);
      expect(await page.title()).toBe('devbox-controller');
      const nav = page.getByRole('navigation', { name: 'Primary' });
      for (const link of ['Servers', 'Templates', 'Logs', 'Health']) await nav.getByRole('link', { name: link, exact: true }).waitFor();
      await page.getByRole('heading', { level: 1, name: 'Editor servers' }).waitFor();
      await page.getByText('No editor servers yet').waitFor();
      expect(await page.getByRole('button', { name: 'New server' }).count()).toBeGreaterThanOrEqual(1);
      expect(await serversTable(page).count()).toBe(0);
      await screenshot(page, 'dashboard-empty');
      // The page loaded everything from the service itself.
      expect(w.requests.length).toBeGreaterThan(1);
    });
  }, 60_000);

  it('creates a server from the New server dialog; its row appears without a reload', async () => {
    await onPage('create-plain', async (_watched, page) => {
      await openDashboard(page);
      const dialog = await openNewServer(page);
      // The extension groups of GET /config are offered, one checkbox each.
      const config = (await service.request('GET', '/config')).body.data;
      const groups = dialog.getByRole('group', { name: 'Extension groups' });
      for (const group of Object.keys(config.extension_groups)) await groups.getByRole('checkbox', { name: group, exact: true }).waitFor();
      await dialog.getByRole('radiogroup', { name: 'Workspace' }).getByRole('radio', { name: 'Empty' }).check();
      await fillNewServer(dialog, 'Alpha');
      await screenshot(page, 'dashboard-create-dialog');
      const answer = await clickAndAwait(page, dialog.getByRole('button', { name: 'Create' }), 'POST', /\/servers$/);
      expect(answer.status()).toBe(201);
      await dialog.waitFor({ state: 'hidden' });

      await rowOf(page, 'Alpha').waitFor();
      await statusShows(page, 'Alpha', 'stopped');
      expect(await notReloaded(page)).toBe(true);
      // The real outcome: the API has it, its manifest is on disk, the port shown is its port.
      const alpha = await serverNamed('Alpha');
      expect(alpha.status).toBe('stopped');
      expect(existsSync(manifestPath('alpha.yaml'))).toBe(true);
      expect(await textOf(await cellOf(page, 'Alpha', 'Port'))).toBe(String(alpha.port));
      await page.getByRole('status', { name: 'Notifications' }).getByText(/Alpha/).first().waitFor();
    });
  }, 90_000);

  it('creates a server with a ZIP upload: progress shown, files extracted into the workspace', async () => {
    const zip = new AdmZip();
    zip.addFile('project/README.md', Buffer.from('# uploaded from the dashboard\n'));
    zip.addFile('project/src/app.py', Buffer.from('print("uploaded")\n'));
    // Incompressible bytes, so the upload lasts long enough for its progress to be seen.
    zip.addFile('project/data.bin', Buffer.from(Array.from({ length: 6 * 1024 * 1024 }, () => Math.floor(Math.random() * 256))));
    const zipPath = join(service.root, 'upload.zip');
    await fs.writeFile(zipPath, zip.toBuffer());

    await onPage('create-zip', async (_watched, page) => {
      await openDashboard(page);
      const dialog = await openNewServer(page);
      await fillNewServer(dialog, 'Zipped');
      await dialog.getByRole('radio', { name: 'ZIP upload' }).check();
      await dialog.getByLabel('ZIP file').setInputFiles(zipPath);
      // Record every value the progress bar takes, however briefly it shows.
      await page.evaluate(() => {
        const seen: string[] = [];
        (window as unknown as { __progress: string[] }).__progress = seen;
        const look = () => {
          for (const bar of document.querySelectorAll('[role="progressbar"], progress')) {
            const label = bar.getAttribute('aria-label') ?? (bar.id ? document.querySelector(`label[for="${bar.id}"]`)?.textContent : '') ?? '';
            const labelledBy = bar.getAttribute('aria-labelledby');
            const name = labelledBy ? document.getElementById(labelledBy)?.textContent ?? '' : label;
            if (/upload progress/i.test(name)) seen.push(bar.getAttribute('aria-valuenow') ?? (bar as any).value?.toString() ?? '');
          }
        };
        new MutationObserver(look).observe(document.body, { subtree: true, childList: true, attributes: true });
      });
      const bar = dialog.getByRole('progressbar', { name: 'Upload progress' });
      const barSeen = bar.waitFor({ state: 'attached', timeout: UI_WAIT }).then(() => true, () => false);
      const answer = await clickAndAwait(page, dialog.getByRole('button', { name: 'Create' }), 'POST', /\/servers\/create-with-workspace$/);
      expect(answer.status()).toBe(201);
      const seen = await page.evaluate(() => (window as unknown as { __progress: string[] }).__progress);
      expect((await barSeen) || seen.length > 0, 'the Upload progress bar showed').toBe(true);
      await dialog.waitFor({ state: 'hidden' });
      await rowOf(page, 'Zipped').waitFor();
      expect(await notReloaded(page)).toBe(true);

      const zipped = await serverNamed('Zipped');
      // Everything sits under one top-level folder, so its contents become the workspace.
      expect(await fs.readFile(join(zipped.workspace_path, 'README.md'), 'utf8')).toBe('# uploaded from the dashboard\n');
      expect(await fs.readFile(join(zipped.workspace_path, 'src', 'app.py'), 'utf8')).toBe('print("uploaded")\n');
      expect((await fs.stat(join(zipped.workspace_path, 'data.bin'))).size).toBe(6 * 1024 * 1024);
      const manifest = parse(await fs.readFile(manifestPath('zipped.yaml'), 'utf8'));
      expect(manifest.spec.workspace.source.archive.sha256).toMatch(/^[0-9a-f]{64}$/);
    });
  }, 120_000);

  it('creates a server from a template with a git source, through the gallery and its wizard', async () => {
    await onPage('create-template', async (_watched, page) => {
      await openDashboard(page);
      await page.getByRole('navigation', { name: 'Primary' }).getByRole('link', { name: 'Templates' }).click();
      await page.getByRole('heading', { level: 1, name: 'Templates' }).waitFor();
      const tabs = page.getByRole('tablist', { name: 'Template categories' });
      await tabs.getByRole('tab', { name: 'Data' }).waitFor();
      await tabs.getByRole('tab', { name: 'Starters' }).click();
      const card = page.getByRole('article', { name: 'Git starter' });
      await card.getByText('A project cloned from git, with the git tools').waitFor();
      await screenshot(page, 'dashboard-templates');
      await card.getByRole('button', { name: 'Use Git starter' }).click();
      const wizard = page.getByRole('dialog', { name: 'Create from Git starter' });
      await wizard.getByRole('textbox', { name: 'Name' }).fill('From git');
      await wizard.getByRole('checkbox', { name: 'Start when created' }).setChecked(false);
      const answer = await clickAndAwait(page, wizard.getByRole('button', { name: 'Create' }), 'POST', /\/servers\/create-from-template$/);
      expect(answer.status()).toBe(201);
      await wizard.waitFor({ state: 'hidden' });
      expect(await notReloaded(page)).toBe(true);

      // The clone of the template's ref lands in the workspace; the manifest names the template.
      const created = await serverNamed('From git');
      await eventually(() => existsSync(join(created.workspace_path, 'notes.txt')), 30_000);
      expect(await fs.readFile(join(created.workspace_path, 'README.md'), 'utf8')).toBe('# starter\n');
      const manifest = parse(await fs.readFile(manifestPath('from-git.yaml'), 'utf8'));
      expect(manifest.metadata.annotations['devbox.dev/template']).toBe('git-starter');
      expect(manifest.spec.workspace.source.git).toEqual({ url: daemon.url('starter'), ref: 'feature' });

      await page.getByRole('navigation', { name: 'Primary' }).getByRole('link', { name: 'Servers' }).click();
      await rowOf(page, 'From git').waitFor();
    });
  }, 120_000);

  it('starts a server: the row shows running with the pid of a live editor, and an Open link', async () => {
    await onPage('start', async (_watched, page) => {
      await openDashboard(page);
      const answer = await clickAndAwait(page, page.getByRole('button', { name: 'Start Alpha' }), 'POST', /\/servers\/[^/]+\/start$/);
      expect(answer.status()).toBe(200);
      await statusShows(page, 'Alpha', 'running');
      const alpha = await serverNamed('Alpha');
      expect(alpha.status).toBe('running');
      expect(processExists(alpha.pid)).toBe(true);
      await eventually(async () => (await textOf(await cellOf(page, 'Alpha', 'PID'))) === String(alpha.pid), UI_WAIT);
      const open = page.getByRole('link', { name: 'Open Alpha' });
      expect(await open.getAttribute('href')).toMatch(new RegExp(`(^|/)vscode/${alpha.port}/$`));
      expect(await open.getAttribute('target')).toBe('_blank');
      await page.getByRole('status', { name: 'Notifications' }).getByText(/Started Alpha/).waitFor();
      // The Open link is gone while stopped: Zipped has none.
      expect(await page.getByRole('link', { name: 'Open Zipped' }).count()).toBe(0);
    });
  }, 90_000);

  it('shows a kill -9 of the editor in the table without a reload', async () => {
    await onPage('kill', async (_watched, page) => {
      await openDashboard(page);
      await statusShows(page, 'Alpha', 'running');
      const { pid } = await serverNamed('Alpha');
      process.kill(pid, 'SIGKILL');
      // restartPolicy Never: the controller records it Failed (Crashed), and the page follows.
      const shown = await statusShows(page, 'Alpha', 'failed', undefined, 30_000);
      expect(shown).toMatch(/Crashed/);
      expect(await notReloaded(page)).toBe(true);
      expect(processExists(pid)).toBe(false);
      const alpha = await serverNamed('Alpha');
      expect(alpha.status).toBe('failed');
      expect(alpha.reason).toBe('Crashed');
      await eventually(async () => (await textOf(await cellOf(page, 'Alpha', 'PID'))) !== String(pid), UI_WAIT);
      await screenshot(page, 'dashboard-crashed');
    });
  }, 90_000);

  it('refreshes one server and all servers, telling the user the outcome', async () => {
    await onPage('refresh', async (_watched, page) => {
      await openDashboard(page);
      const alpha = await serverNamed('Alpha');
      const one = await clickAndAwait(page, await menuItem(page, 'Alpha', 'Refresh'), 'POST', new RegExp(`/servers/${alpha.id}/refresh-status$`));
      expect(one.status()).toBe(200);
      const notes = page.getByRole('status', { name: 'Notifications' });
      await notes.getByText(/Alpha/).first().waitFor();
      const all = await clickAndAwait(page, page.getByRole('button', { name: 'Refresh all' }), 'POST', /\/servers\/refresh-all$/);
      expect(all.status()).toBe(200);
      const { total_servers: total } = await all.json();
      expect(total).toBe((await servers()).length);
      // The outcome is announced (the message the API gave, or one naming the count).
      await eventually(async () => (await textOf(notes)).match(new RegExp(`refresh|${total}`, 'i')), UI_WAIT);
      expect(await notReloaded(page)).toBe(true);
    });
  }, 60_000);

  it('shows a server\'s live logs, filtered by level and search, paused, and downloaded', async () => {
    await onPage('logs', async (w, page) => {
      const alpha = await serverNamed('Alpha');
      await openDashboard(page);
      await (await menuItem(page, 'Alpha', 'Logs')).click();
      await page.getByRole('heading', { level: 1, name: 'Logs' }).waitFor();
      expect(page.url()).toContain(`#/logs/${alpha.id}`);
      const server = page.getByRole('combobox', { name: 'Server' });
      expect(await server.evaluate((el: any) => el.selectedOptions[0]?.textContent?.trim())).toBe('Alpha');
      const lines = logLines(page);
      const listening = `[stub] HTTP server listening on http://127.0.0.1:${alpha.port}/`;
      // The replay holds the line the editor wrote when it started earlier.
      await eventually(async () => (await textOf(lines)).includes(listening), UI_WAIT);
      const before = count(await textOf(lines), listening);

      // Live: start the editor again; the line it writes now appears without a reload.
      expect((await service.request('POST', `/servers/${alpha.id}/start`)).status).toBe(200);
      await eventually(async () => count(await textOf(lines), listening) > before, UI_WAIT);
      await screenshot(page, 'dashboard-logs');

      // Level: warn keeps the editor's stderr line and drops its stdout (INFO) lines.
      const level = page.getByRole('combobox', { name: 'Level' });
      await level.selectOption({ label: 'warn' });
      await eventually(async () => {
        const text = await textOf(lines);
        return text.includes('[stub] a warning on stderr') && !text.includes(listening);
      }, UI_WAIT);
      await level.selectOption({ label: 'All levels' });
      await eventually(async () => (await textOf(lines)).includes(listening), UI_WAIT);

      // Search narrows to matching lines.
      const search = page.getByRole('searchbox', { name: 'Search logs' });
      await search.fill('a warning on stderr');
      await eventually(async () => {
        const text = await textOf(lines);
        return text.includes('[stub] a warning on stderr') && !text.includes(listening);
      }, UI_WAIT);
      await search.fill('');
      await eventually(async () => (await textOf(lines)).includes(listening), UI_WAIT);

      // Pause: new lines do not show while paused; they do again after Pause is released.
      const pause = page.getByRole('button', { name: 'Pause' });
      await pause.click();
      expect(await pause.getAttribute('aria-pressed')).toBe('true');
      const paused = await textOf(lines);
      // The server's entries in the service's log hub when the page paused: the page is sent each one after them.
      const hubAtPause = service.logs.tail(alpha.manifest, 100_000);
      expect((await service.request('POST', `/servers/${alpha.id}/restart`)).status).toBe(200);
      // The restarted editor writes its line again; once the page says it holds at least as many new
      // lines as the hub has up to that one, the page has received them all: held, not shown.
      const upToListening = await eventually(() => {
        const entries = service.logs.tail(alpha.manifest, 100_000);
        const since = entries.slice(entries.indexOf(hubAtPause.at(-1)!) + 1);
        const at = since.findIndex((entry) => entry.message.includes(listening));
        return at < 0 ? undefined : at + 1;
      }, UI_WAIT);
      const held = page.getByText(/Paused: \d+ new lines? held/);
      await eventually(async () => Number(/Paused: (\d+)/.exec(await textOf(held))?.[1] ?? 0) >= upToListening, UI_WAIT);
      expect(await textOf(lines)).toBe(paused);
      await pause.click();
      expect(await pause.getAttribute('aria-pressed')).toBe('false');
      // Whether held lines are shown on release or dropped, lines written from now on show.
      expect((await service.request('POST', `/servers/${alpha.id}/restart`)).status).toBe(200);
      await eventually(async () => count(await textOf(lines), listening) > count(paused, listening), UI_WAIT);

      // Download gives a file holding the lines.
      const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download' }).click()]);
      const saved = join(ARTIFACTS, 'dashboard-logs-download.txt');
      await download.saveAs(saved);
      const file = await fs.readFile(saved, 'utf8');
      expect(file).toContain(listening);
      expect(file).toContain('[stub] a warning on stderr');
      // The live lines came over the log stream, on the service's own address.
      expect(w.requests.some((r) => r.startsWith('WS ') && r.includes('/ws/logs'))).toBe(true);
    });
  }, 120_000);

  it('shows a server\'s page: conditions, extensions, manifest YAML and events', async () => {
    await onPage('server-page', async (_watched, page) => {
      const alpha = await serverNamed('Alpha');
      await openDashboard(page);
      await rowOf(page, 'Alpha').getByRole('link', { name: 'Alpha', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Alpha' }).waitFor();
      expect(page.url()).toContain(`#/servers/${alpha.id}`);
      await page.getByRole('button', { name: 'Stop Alpha' }).waitFor();
      // Its own Logs link (the navigation has one too, to all servers' logs).
      await eventually(async () => {
        const hrefs = await Promise.all((await page.getByRole('link', { name: 'Logs', exact: true }).all()).map((l) => l.getAttribute('href')));
        return hrefs.some((h) => h?.endsWith(`#/logs/${alpha.id}`));
      }, UI_WAIT);

      const conditions = page.getByRole('region', { name: 'Conditions' });
      await eventually(async () => (await conditions.getByRole('row').count()) > 1, UI_WAIT);
      expect(await textOf(conditions)).toMatch(/True|False/);

      const extensions = page.getByRole('region', { name: 'Extensions' });
      expect(alpha.extension_status.length).toBeGreaterThan(0);
      for (const extension of alpha.extension_status) {
        await eventually(async () => {
          const text = await textOf(extensions);
          return text.includes(extension.id) && text.includes(extension.state);
        }, UI_WAIT);
      }
      expect(await page.getByRole('region', { name: 'Manifest errors' }).count()).toBe(0);

      const yaml = page.getByRole('region', { name: 'Manifest' }).getByLabel('Manifest YAML');
      await eventually(async () => (await textOf(yaml)).includes('kind: EditorServer'), UI_WAIT);
      const shown = parse((await yaml.textContent()) ?? '');
      const onDisk = parse(await fs.readFile(manifestPath('alpha.yaml'), 'utf8'));
      expect(shown.metadata.name).toBe('alpha');
      expect(shown.spec).toEqual(onDisk.spec);

      const events = page.getByRole('region', { name: 'Events' });
      await eventually(async () => (await events.getByRole('row').count()) > 1, UI_WAIT);
      // The crash of the kill -9 test is among them.
      expect(await textOf(events)).toMatch(/Crash/i);
      await screenshot(page, 'dashboard-server', { fullPage: true });
    });
  }, 90_000);

  it('follows the watch stream: hand-edited manifests on disk show in the table without a reload', async () => {
    await onPage('watch', async (w, page) => {
      await openDashboard(page);
      await statusShows(page, 'Zipped', 'stopped');
      // running: true written by hand starts the editor; the row follows.
      const zippedFile = manifestPath('zipped.yaml');
      const zipped = parse(await fs.readFile(zippedFile, 'utf8'));
      zipped.spec.running = true;
      await writeWhole(zippedFile, stringify(zipped));
      await statusShows(page, 'Zipped', 'running', undefined, 30_000);
      const { pid } = await serverNamed('Zipped');
      expect(processExists(pid)).toBe(true);

      // A new display name renames the row.
      const gitFile = manifestPath('from-git.yaml');
      const fromGit = parse(await fs.readFile(gitFile, 'utf8'));
      fromGit.spec.displayName = 'From git (edited)';
      await writeWhole(gitFile, stringify(fromGit));
      await rowOf(page, 'From git (edited)').waitFor({ timeout: 30_000 });
      expect(await rowOf(page, 'From git').count()).toBe(0);
      expect(await notReloaded(page)).toBe(true);
      // The page got them from the watch stream.
      expect(w.requests.some((r) => /GET .*\/servers\?(.*&)?watch=1/.test(r))).toBe(true);
    });
  }, 90_000);

  it('stops a server: the row shows stopped and the editor is gone', async () => {
    await onPage('stop', async (_watched, page) => {
      await openDashboard(page);
      const { pid, id } = await serverNamed('Zipped');
      expect(processExists(pid)).toBe(true);
      const answer = await clickAndAwait(page, await menuItem(page, 'Zipped', 'Stop'), 'POST', new RegExp(`/servers/${id}/stop$`));
      expect(answer.status()).toBe(200);
      await statusShows(page, 'Zipped', 'stopped');
      await eventually(() => !processExists(pid), 15_000);
      expect((await serverNamed('Zipped')).status).toBe('stopped');
      expect(parse(await fs.readFile(manifestPath('zipped.yaml'), 'utf8')).spec.running).toBe(false);
      expect(await page.getByRole('link', { name: 'Open Zipped' }).count()).toBe(0);
    });
  }, 60_000);

  it('shows the API\'s error message in the dialog and keeps what was typed', async () => {
    await onPage('api-error', async (w, page) => {
      // Chromium logs the failed request itself; that one is expected.
      w.allowConsoleError(/status of 422|status of 400/);
      await openDashboard(page);
      const before = (await servers()).length;
      const dialog = await openNewServer(page);
      await fillNewServer(dialog, 'Nowhere');
      await dialog.getByRole('radio', { name: 'Git repository' }).check();
      await dialog.getByRole('textbox', { name: 'Git URL' }).fill(daemon.url('no-such-repository'));
      const answer = await clickAndAwait(page, dialog.getByRole('button', { name: 'Create' }), 'POST', /\/servers(\/create-with-workspace)?$/);
      expect(answer.status()).toBe(422);
      const { error } = await answer.json();
      expect(error.code).toBe('WORKSPACE_SOURCE_FAILED');
      const alert = dialog.getByRole('alert');
      await eventually(async () => (await textOf(alert)).includes(error.message.replace(/\s+/g, ' ').trim()), UI_WAIT);
      // The dialog stays open with what was typed; no server was left behind.
      expect(await dialog.isVisible()).toBe(true);
      expect(await dialog.getByRole('textbox', { name: 'Name' }).inputValue()).toBe('Nowhere');
      expect(await dialog.getByRole('textbox', { name: 'Git URL' }).inputValue()).toBe(daemon.url('no-such-repository'));
      expect((await servers()).length).toBe(before);
      expect(existsSync(manifestPath('nowhere.yaml'))).toBe(false);
      await screenshot(page, 'dashboard-api-error');
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      await dialog.waitFor({ state: 'hidden' });
    });
  }, 90_000);

  it('deletes a server only after confirmation: row and manifest gone', async () => {
    await onPage('delete', async (_watched, page) => {
      await openDashboard(page);
      const name = 'From git (edited)';
      const { id } = await serverNamed(name);
      await (await menuItem(page, name, /^Delete/)).click();
      const confirm = page.getByRole('dialog', { name: `Delete ${name}?` });
      await confirm.getByRole('button', { name: 'Cancel' }).click();
      await confirm.waitFor({ state: 'hidden' });
      expect((await service.request('GET', `/servers/${id}`)).status).toBe(200);
      expect(await rowOf(page, name).count()).toBe(1);

      await (await menuItem(page, name, /^Delete/)).click();
      const answer = await clickAndAwait(page, confirm.getByRole('button', { name: 'Delete', exact: true }), 'DELETE', new RegExp(`/servers/${id}$`));
      expect([200, 202]).toContain(answer.status());
      await rowOf(page, name).waitFor({ state: 'detached' });
      await eventually(async () => (await service.request('GET', `/servers/${id}`)).status === 404, 15_000);
      expect(existsSync(manifestPath('from-git.yaml'))).toBe(false);
      expect(await notReloaded(page)).toBe(true);
    });
  }, 60_000);

  it('shows the service\'s health, with a template file\'s problem', async () => {
    const broken = join(templatesDir, 'broken.yaml');
    await fs.writeFile(broken, 'apiVersion: devbox.dev/v1alpha1\nkind: EditorServerTemplate\nmetadata: {name: broken}\ngallery: 12\n');
    try {
      await eventually(async () => (await service.request('GET', '/health')).body.status === 'degraded', 15_000);
      await onPage('health', async (_watched, page) => {
        await openDashboard(page);
        await page.getByRole('navigation', { name: 'Primary' }).getByRole('link', { name: 'Health' }).click();
        const heading = page.getByRole('heading', { level: 1, name: 'Service health' });
        await heading.waitFor();
        const main = page.locator('body');
        await eventually(async () => {
          const text = await textOf(main);
          return /degraded/i.test(text) && text.includes('broken.yaml') && text.includes('stub-editor.mjs');
        }, UI_WAIT);
        await screenshot(page, 'dashboard-health-degraded', { fullPage: true });
      });
    } finally {
      await fs.rm(broken, { force: true });
    }
    await eventually(async () => (await service.request('GET', '/health')).body.status === 'healthy', 15_000);
    await onPage('health-ok', async (_watched, page) => {
      await openDashboard(page, '#/health');
      const main = page.locator('body');
      await eventually(async () => /healthy/i.test(await textOf(main)) && (await textOf(main)).includes(STUB_EDITOR.split('/').pop()!), UI_WAIT);
      await screenshot(page, 'dashboard-health', { fullPage: true });
    });
  }, 90_000);

  it('opens, fills and submits the New server dialog with the keyboard only', async () => {
    await onPage('keyboard', async (_watched, page) => {
      await openDashboard(page);
      await rowOf(page, 'Alpha').waitFor();
      const focused = (locator: Locator) => locator.evaluate((el) => el === document.activeElement).catch(() => false);
      const tabTo = async (locator: Locator, limit = 60) => {
        for (let i = 0; i < limit; i++) {
          if (await focused(locator)) return;
          await page.keyboard.press('Tab');
        }
        throw new Error(`Tab never reached ${locator}`);
      };
      const newServer = page.getByRole('button', { name: 'New server' }).first();
      await tabTo(newServer);
      // Escape closes the dialog; Enter opens it again.
      await page.keyboard.press('Enter');
      const dialog = page.getByRole('dialog', { name: 'New server' });
      await dialog.waitFor();
      await page.keyboard.press('Escape');
      await dialog.waitFor({ state: 'hidden' });
      // Focus comes back to the button when the <dialog> element itself closes, a moment after it
      // is hidden (the page closes it after rendering): wait for that close.
      await page.waitForFunction(() => document.querySelector('dialog[open]') === null);
      await tabTo(newServer);
      await page.keyboard.press('Enter');
      await dialog.waitFor();
      const name = dialog.getByRole('textbox', { name: 'Name' });
      await tabTo(name, 20);
      await page.keyboard.type('Keyed');
      const create = dialog.getByRole('button', { name: 'Create' });
      await tabTo(create, 40);
      await page.keyboard.press('Enter');
      await dialog.waitFor({ state: 'hidden' });
      await rowOf(page, 'Keyed').waitFor();
      expect((await serverNamed('Keyed')).name).toBe('Keyed');
      expect(existsSync(manifestPath('keyed.yaml'))).toBe(true);
    });
  }, 60_000);

  it('screenshots the servers table with several servers running; sorts and filters it', async () => {
    // A few more servers, most of them running, for a table a person would see.
    for (const name of ['Data pipeline', 'Notebooks']) {
      const created = await service.request('POST', '/servers', { name });
      expect(created.status).toBe(201);
    }
    for (const s of await servers()) {
      if (s.name !== 'Zipped' && s.status !== 'running') expect((await service.request('POST', `/servers/${s.id}/start`)).status).toBe(200);
    }
    // Once the background sampler has filled in CPU and memory of every running server.
    const list = await eventually(async () => {
      const all = await servers();
      return all.filter((s) => s.status === 'running').every((s) => s.memory_mb > 0 && typeof s.cpu_percent === 'number') ? all : undefined;
    }, UI_WAIT);
    expect(list.filter((s) => s.status === 'running').length).toBeGreaterThanOrEqual(3);

    await onPage('servers-table', async (_watched, page) => {
      await openDashboard(page);
      for (const s of list) await statusShows(page, s.name, s.status);
      // The table shows the sampled figures of every running server (not the dash of none).
      for (const s of list.filter((s) => s.status === 'running')) {
        for (const column of ['Uptime', 'CPU', 'Memory']) {
          await eventually(async () => !['', '—'].includes(await textOf(await cellOf(page, s.name, column))), UI_WAIT);
        }
      }
      await screenshot(page, 'dashboard-servers');
      if (UPDATE_SCREENSHOTS) await screenshot(page, 'dashboard', { path: join(ROOT, 'docs', 'dashboard.png') });
      // Sorting by a column header's button sets aria-sort on it.
      const nameHeader = serversTable(page).getByRole('columnheader').filter({ has: page.getByRole('button', { name: 'Name' }) });
      await nameHeader.getByRole('button', { name: 'Name' }).click();
      expect(['ascending', 'descending']).toContain(await nameHeader.getAttribute('aria-sort'));
      // The filter box narrows the rows.
      await page.getByRole('searchbox', { name: 'Filter servers' }).fill('pipeline');
      await eventually(async () => (await rowOf(page, 'Alpha').count()) === 0 && (await rowOf(page, 'Data pipeline').count()) === 1, UI_WAIT);
    });
  }, 120_000);

  it('is usable in a narrow window (420×800)', async () => {
    await onPage('narrow', async (_watched, page) => {
      await openDashboard(page);
      await rowOf(page, 'Alpha').waitFor();
      // Usable at 420 px: the actions reachable, names readable, no sideways scroll of the page itself.
      await page.getByRole('button', { name: 'New server' }).first().waitFor({ state: 'visible' });
      expect(await page.getByRole('link', { name: 'Alpha', exact: true }).isVisible()).toBe(true);
      // The table may scroll inside its own box; the page itself must not scroll sideways.
      const sideways = await page.evaluate(() => {
        window.scrollTo(10_000, 0);
        const x = window.scrollX;
        window.scrollTo(0, 0);
        return { x, scrollWidth: document.documentElement.scrollWidth };
      });
      await screenshot(page, 'dashboard-narrow', { fullPage: true });
      expect(sideways.x, `the page scrolls sideways (scrollWidth ${sideways.scrollWidth} px at 420 px)`).toBeLessThanOrEqual(1);
    }, { viewport: { width: 420, height: 800 } });
  }, 60_000);

  it('follows a dark color scheme', async () => {
    await onPage('dark', async (_watched, page) => {
      await openDashboard(page);
      await rowOf(page, 'Alpha').waitFor();
      // Dark follows the system: the page's background is dark.
      const marginLuminance = () => {
        // The first opaque background behind a point of the page's margin, up the tree.
        let el: any = document.elementFromPoint(3, window.innerHeight - 3) ?? document.body;
        let rgb = [255, 255, 255];
        for (; el; el = el.parentElement) {
          const values = (getComputedStyle(el).backgroundColor.match(/[\d.]+/g) ?? []).map(Number);
          if (values.length >= 3 && (values[3] ?? 1) > 0) {
            rgb = values.slice(0, 3);
            break;
          }
        }
        return (0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2]) / 255;
      };
      // Once the page's styles have settled on it (measured until then, as a person would see it).
      await eventually(async () => (await page.evaluate(marginLuminance)) < 0.35, UI_WAIT);
      const luminance = await page.evaluate(marginLuminance);
      expect(luminance).toBeLessThan(0.35);
      await screenshot(page, 'dashboard-dark');
    }, { colorScheme: 'dark' });
  }, 60_000);
});

// The server page's Dev container panel in real Chromium, fed by the real flow: git repositories
// made here carry devcontainer.json files (one asking for a bit of everything, one that does not
// parse, one the manifest ignores), servers are made from them through the API and a manifest
// file, the controller reads them (stub editor), and the page shows what it found, at 1280×800
// and at 420 px, keyboard included.
import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ARTIFACTS, closeBrowser, launchBrowser, screenshot, withCleanPage } from '../helpers/browser.ts';
import { ensureWebBuilt, UI_WAIT } from '../helpers/dashboard-page.ts';
import { postForm } from '../helpers/form.ts';
import { eventually, startTestService, type TestService } from '../helpers/service.ts';

// Code run in the page by evaluate(): the project's tsconfig has no DOM types.
declare const document: any;

/** A value the panel must never show: environment values may be secrets. */
const SECRET_VALUE = 'do-not-show-7f3a91';

const FULL = `// Everything the panel shows, as a team would write it.
{
  "name": "orders-service",
  "image": "python:3.12-bookworm",
  "features": { "ghcr.io/devcontainers/features/node:1": {} },
  "customizations": {
    "vscode": {
      "extensions": ["acme.one"],
      "settings": {
        "files.trimTrailingWhitespace": true,
        /* the manifest says 15, and wins */
        "editor.fontSize": 13
      }
    }
  },
  "containerEnv": { "GREETING": "hello", "ORDERS_DB_PASSWORD": "${SECRET_VALUE}" },
  "remoteEnv": { "ORDERS_HOME": "\${containerWorkspaceFolder}" },
  "onCreateCommand": "echo created > created.txt",
  "postCreateCommand": ["sh", "-c", "echo cannot migrate >&2; exit 3"],
  "postStartCommand": { "note": "echo started >> started.txt" },
  "forwardPorts": [8000],
  "portsAttributes": { "8000": { "label": "Orders API", "onAutoForward": "notify" } },
  "hostRequirements": { "cpus": 1, "memory": "256mb" }
}
`;

let service: TestService;
let browser: Browser;
let scratch: string;

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=test', '-c', 'user.email=test@example.invalid', '-c', 'init.defaultBranch=main', ...args], { cwd, stdio: 'pipe' });

/** A git repository at scratch/name holding a README and, when given, .devcontainer/devcontainer.json. */
async function makeRepository(name: string, devcontainer?: string): Promise<string> {
  const dir = join(scratch, name);
  await fs.mkdir(join(dir, '.devcontainer'), { recursive: true });
  git(dir, 'init', '-q');
  await fs.writeFile(join(dir, 'README.md'), `# ${name}\n`);
  if (devcontainer !== undefined) await fs.writeFile(join(dir, '.devcontainer', 'devcontainer.json'), devcontainer);
  git(dir, 'add', '.');
  git(dir, 'commit', '-q', '-m', 'first');
  return `file://${dir}`;
}

/** The server's record once the controller has read its devcontainer.json (whatever it made of it). */
async function readRecord(id: string) {
  return eventually(async () => {
    const record = (await service.request('GET', `/servers/${id}`)).body;
    return record?.devcontainer ? record : undefined;
  }, 30_000, 100);
}

const servers: Record<'orders' | 'broken' | 'ignored', string> = { orders: '', broken: '', ignored: '' };

beforeAll(async () => {
  ensureWebBuilt();
  scratch = await fs.mkdtemp(join(tmpdir(), 'devbox-e2e-dcpanel-'));
  service = await startTestService();
  browser = await launchBrowser();

  const orders = await postForm(`${service.url}/servers/create-with-workspace`, {
    name: 'Orders service', github_url: await makeRepository('orders', FULL), settings: JSON.stringify({ 'editor.fontSize': 15 }),
  });
  expect(orders.status, JSON.stringify(orders.body)).toBe(201);
  servers.orders = orders.body.id;

  const broken = await postForm(`${service.url}/servers/create-with-workspace`, {
    name: 'Broken', github_url: await makeRepository('broken', '{\n  "name": "broken",\n  "forwardPorts": [8000\n}\n'),
  });
  expect(broken.status, JSON.stringify(broken.body)).toBe(201);
  servers.broken = broken.body.id;

  // spec.devcontainer is the manifest's: written as a file, as an operator would.
  const ignoredUrl = await makeRepository('ignored', '{ "customizations": { "vscode": { "extensions": ["acme.two"] } } }');
  await fs.writeFile(join(service.settings.manifestsDir, 'ignored.yaml'), [
    'apiVersion: devbox.dev/v1alpha1', 'kind: EditorServer', 'metadata:', '  name: ignored', 'spec:', '  displayName: Ignored',
    '  running: false', '  devcontainer: ignore', '  workspace:', '    source:', `      git: { url: "${ignoredUrl}" }`, '',
  ].join('\n'));
  servers.ignored = (await eventually(async () => (await service.request('GET', '/servers')).body.find((r: { manifest: string }) => r.manifest === 'ignored'), 20_000)).id;
}, 120_000);
afterAll(async () => {
  try {
    await closeBrowser(browser);
  } finally {
    await service?.stop();
    await fs.rm(scratch, { recursive: true, force: true });
  }
});

/** What a person reads in it (innerText: the boxes' line breaks, as spaces). */
const shown = async (locator: Locator) => (await locator.innerText({ timeout: 1000 })).replace(/\s+/g, ' ').trim();
const panelOf = (page: Page) => page.getByRole('region', { name: 'Dev container' });
const groupOf = (panel: Locator, name: string) => panel.getByRole('group', { name, exact: true });

describe('the Dev container panel', () => {
  it('shows what came from devcontainer.json: warnings first, extensions and their state, settings the manifest overrides, variable names only, commands, ports with links, requirements and image', async () => {
    const record = await readRecord(servers.orders);
    expect(record.devcontainer.state).toBe('applied');
    // The editor runs, so each forwarded port has its link.
    const started = await service.request('POST', `/servers/${servers.orders}/start`);
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    await eventually(async () => (await service.request('GET', `/servers/${servers.orders}`)).body.extension_status
      ?.some((e: { id: string; state: string }) => e.id === 'acme.one' && e.state === 'Installed'), 30_000, 100);

    for (const [label, viewport] of [['wide', { width: 1280, height: 800 }], ['narrow', { width: 420, height: 900 }]] as const) {
      await withCleanPage(browser, service.url, `devcontainer-panel-${label}`, UI_WAIT, async ({ page }) => {
        // While GET /servers/{id}/ports is not there, the panel lists the plan's ports (without whether they are listened on).
        await page.goto(`${service.url}/#/servers/${servers.orders}`);
        const panel = panelOf(page);
        await panel.waitFor();
        await panel.getByText(/^Applied from \.devcontainer\/devcontainer\.json \(sha256 [0-9a-f]{12}\)$/).waitFor();

        // What is not honoured, before the rest.
        const warnings = groupOf(panel, 'Not honoured here');
        expect(await shown(warnings.getByRole('list', { name: 'Not honoured here' }))).toMatch(/features/);
        expect(await shown(warnings.getByRole('list', { name: 'Not honoured here' }))).toMatch(/image/);

        const extensions = groupOf(panel, 'Extensions').getByRole('listitem').filter({ hasText: 'acme.one' });
        await eventually(async () => /acme\.one\s*Installed 1\.0\.0/.test(await shown(extensions)), UI_WAIT, 100);

        const settings = groupOf(panel, 'Settings');
        expect(await shown(settings.getByRole('listitem').filter({ hasText: 'editor.fontSize' }))).toBe("editor.fontSize 13 the manifest's value wins");
        expect(await shown(settings.getByRole('listitem').filter({ hasText: 'files.trimTrailingWhitespace' }))).toBe('files.trimTrailingWhitespace true');

        const env = groupOf(panel, 'Environment');
        expect((await env.getByRole('listitem').allInnerTexts()).sort()).toEqual(['GREETING', 'ORDERS_DB_PASSWORD', 'ORDERS_HOME']);
        expect(await page.evaluate(() => document.body.innerText)).not.toContain(SECRET_VALUE);

        const lifecycle = panel.getByRole('table', { name: 'Lifecycle commands' });
        const commandRows = lifecycle.getByRole('row');
        expect(await shown(commandRows.filter({ has: page.getByRole('rowheader', { name: /^onCreateCommand\b/ }) }))).toMatch(/once per workspace, before the editor echo created > created\.txt/);
        expect(await shown(commandRows.filter({ has: page.getByRole('rowheader', { name: /^postCreateCommand\b/ }) }))).toMatch(/once per workspace sh -c echo cannot migrate/);
        expect(await shown(commandRows.filter({ has: page.getByRole('rowheader', { name: /^postStartCommand\b/ }) }))).toMatch(/every start note: echo started >> started\.txt/);

        const ports = panel.getByRole('table', { name: 'Forwarded ports' });
        const row = ports.getByRole('row').filter({ hasText: 'Orders API' });
        expect(await shown(row.getByRole('rowheader'))).toBe('8000');
        const link = row.getByRole('link', { name: 'Open port 8000' });
        expect(await link.getAttribute('href')).toBe(`vscode/${record.port}/proxy/8000/`);

        expect(await shown(panel.getByRole('definition').filter({ hasText: 'CPU' }))).toMatch(/^1 CPU, \d+ MB memory$/);
        expect(await shown(panel.getByRole('definition').filter({ hasText: 'bookworm' }))).toBe('python:3.12-bookworm');

        // Readable: nothing sticks out of the page sideways (wide tables scroll in their box).
        expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(viewport.width);
        // Reached from the keyboard: Tab, from the top of the page, comes to the port's link.
        let presses = 0;
        while (!(await page.evaluate(() => document.activeElement?.textContent === 'Open port 8000 ↗'))) {
          expect(++presses, 'Tab presses before the port link has focus').toBeLessThan(100);
          await page.keyboard.press('Tab');
        }
        // From the top, so the sticky header is drawn there; then the panel alone, cut from the whole page.
        await page.evaluate(() => (globalThis as any).scrollTo(0, 0));
        await screenshot(page, `devcontainer-panel-${label}`, { fullPage: true });
        await page.screenshot({ path: join(ARTIFACTS, `devcontainer-panel-${label}-panel.png`), fullPage: true, clip: (await panel.boundingBox())! });
      }, { viewport });
    }
  }, 90_000);

  it('says when the file could not be read, and where, and when the manifest ignores it', async () => {
    const broken = await readRecord(servers.broken);
    expect(broken.devcontainer.state).toBe('invalid');
    const ignored = await readRecord(servers.ignored);
    expect(ignored.devcontainer.state).toBe('ignored');
    await withCleanPage(browser, service.url, 'devcontainer-panel-states', UI_WAIT, async ({ page }) => {
      await page.goto(`${service.url}/#/servers/${servers.broken}`);
      const panel = panelOf(page);
      await panel.getByText('Invalid', { exact: true }).waitFor();
      const text = (await panel.textContent()) ?? '';
      expect(text).toContain('could not be read: nothing from it is applied until it is fixed');
      // The controller's own message, with the line where it broke.
      expect(text).toContain(broken.devcontainer.message);
      expect(broken.devcontainer.message).toMatch(/^\.devcontainer\/devcontainer\.json:4:1: /);
      expect(await panel.getByRole('table').count()).toBe(0);
      await screenshot(page, 'devcontainer-panel-invalid', { fullPage: true });

      await page.goto(`${service.url}/#/servers/${servers.ignored}`);
      await panelOf(page).getByText('Ignored', { exact: true }).waitFor();
      expect(await shown(panelOf(page))).toContain('spec.devcontainer: ignore');
      expect(await groupOf(panelOf(page), 'Extensions').count()).toBe(0);
    });
  });

  it("shows each lifecycle command's outcome: succeeded, failed with its exit code and last line, the rest skipped", async () => {
    await withCleanPage(browser, service.url, 'devcontainer-panel-lifecycle', UI_WAIT, async ({ page }) => {
      await page.goto(`${service.url}/#/servers/${servers.orders}`);
      const rows = panelOf(page).getByRole('table', { name: 'Lifecycle commands' }).getByRole('row');
      const cells = async (name: string) => (await rows.filter({ has: page.getByRole('rowheader', { name: new RegExp(`^${name}\\b`) }) }).getByRole('cell').allInnerTexts()).map((t) => t.replace(/\s+/g, ' ').trim());
      // The commands run as the controller gets to them: the page follows the record.
      await eventually(async () => (await cells('postCreateCommand'))[0]?.startsWith('Failed'), 60_000, 200);
      expect((await cells('onCreateCommand'))[0]).toMatch(/^Succeeded/);
      const failed = await cells('postCreateCommand');
      expect(failed[1]).toBe('3');
      expect(failed[2]).toContain('cannot migrate');
      expect((await cells('postStartCommand'))[0]).toMatch(/^Skipped/);
      await screenshot(page, 'devcontainer-panel-lifecycle', { fullPage: true });
    });
  }, 90_000);
});

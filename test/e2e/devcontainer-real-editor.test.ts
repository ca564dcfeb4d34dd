// devcontainer.json with the real code-server in Chromium: a git repository made here carries a
// .devcontainer/devcontainer.json (JSON with comments) that asks for an extension (a color theme,
// from a .vsix in DEVBOX_VSIX_DIR: no marketplace is reachable) and for settings. The server is
// created from the repository through the API, with one setting of its own that the manifest must
// win; opened through the service's proxy, the workbench shows the extension installed (the
// Extensions view lists it, and its theme paints the editor) and the settings in effect, measured
// on the editor's lines: the file's font size, the manifest's line height over the file's.
import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import AdmZip from 'adm-zip';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveEditorBinary } from '../../src/runtime/editor-binary.ts';
import { closeBrowser, launchBrowser, screenshot } from '../helpers/browser.ts';
import { postForm } from '../helpers/form.ts';
import { eventually, startTestService, type TestService } from '../helpers/service.ts';

// Code run in the page by evaluate(): the project's tsconfig has no DOM types.
declare const getComputedStyle: any;

const THEME_LABEL = 'Devbox Test Theme';
/** The theme's editor background, which no built-in theme uses: seen, it is the extension's. */
const THEME_BACKGROUND = 'rgb(18, 52, 86)';

let service: TestService;
let browser: Browser;
let scratch: string;

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=test', '-c', 'user.email=test@example.invalid', '-c', 'init.defaultBranch=main', ...args], { cwd, stdio: 'pipe' });

/** A .vsix of `devbox-test.theme` that contributes one color theme (a ZIP in the layout code-server installs). */
function buildThemeVsix(file: string): void {
  const zip = new AdmZip();
  zip.addFile('[Content_Types].xml', Buffer.from(
    '<?xml version="1.0" encoding="utf-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    + '<Default Extension=".json" ContentType="application/json"/><Default Extension=".vsixmanifest" ContentType="text/xml"/></Types>'));
  zip.addFile('extension.vsixmanifest', Buffer.from(
    '<?xml version="1.0" encoding="utf-8"?><PackageManifest Version="2.0.0" xmlns="http://schemas.microsoft.com/developer/vsx-schema/2011">'
    + `<Metadata><Identity Language="en-US" Id="theme" Version="1.0.0" Publisher="devbox-test"/><DisplayName>${THEME_LABEL}</DisplayName><Description xml:space="preserve">A theme for the tests</Description><Categories>Themes</Categories></Metadata>`
    + '<Installation><InstallationTarget Id="Microsoft.VisualStudio.Code"/></Installation><Dependencies/>'
    + '<Assets><Asset Type="Microsoft.VisualStudio.Code.Manifest" Path="extension/package.json" Addressable="true"/></Assets></PackageManifest>'));
  zip.addFile('extension/package.json', Buffer.from(JSON.stringify({
    name: 'theme', publisher: 'devbox-test', version: '1.0.0', displayName: THEME_LABEL, description: 'A theme for the tests',
    engines: { vscode: '^1.0.0' }, categories: ['Themes'],
    contributes: { themes: [{ label: THEME_LABEL, uiTheme: 'vs-dark', path: './themes/test-color-theme.json' }] },
  })));
  zip.addFile('extension/themes/test-color-theme.json', Buffer.from(JSON.stringify({
    name: THEME_LABEL, type: 'dark', colors: { 'editor.background': '#123456', 'editor.foreground': '#f0f0f0' },
  })));
  zip.writeZip(file);
}

/** A repository whose devcontainer.json asks for the theme and three settings. */
async function makeRepository(dir: string): Promise<void> {
  await fs.mkdir(join(dir, '.devcontainer'), { recursive: true });
  git(dir, 'init', '-q');
  await fs.writeFile(join(dir, 'README.md'), '# Themed\n\nfirst line of the readme\n');
  await fs.writeFile(join(dir, '.devcontainer', 'devcontainer.json'), `// The team's editor, as VS Code would set it up.
{
  "name": "themed",
  "customizations": {
    "vscode": {
      "extensions": ["devbox-test.theme"],
      "settings": {
        "workbench.colorTheme": "${THEME_LABEL}",
        "editor.fontSize": 23,
        /* the manifest says 30, and wins */
        "editor.lineHeight": 44
      }
    }
  }
}
`);
  git(dir, 'add', '.');
  git(dir, 'commit', '-q', '-m', 'first');
}

beforeAll(async () => {
  scratch = await fs.mkdtemp(join(tmpdir(), 'devbox-e2e-devcontainer-'));
  const vsixDir = join(scratch, 'vsix');
  await fs.mkdir(vsixDir);
  buildThemeVsix(join(vsixDir, 'devbox-test.theme-1.0.0.vsix'));
  await makeRepository(join(scratch, 'themed'));
  // The installer reads DEVBOX_VSIX_DIR when the service is made.
  process.env.DEVBOX_VSIX_DIR = vsixDir;
  try {
    service = await startTestService({
      editorBin: resolveEditorBinary().path,
      config: { editor: { startTimeoutSeconds: 60, readyTimeoutSeconds: 60, stopGraceSeconds: 5 } },
    });
  } finally {
    delete process.env.DEVBOX_VSIX_DIR;
  }
  browser = await launchBrowser();
}, 120_000);
afterAll(async () => {
  try {
    await closeBrowser(browser);
  } finally {
    await service?.stop();
    await fs.rm(scratch, { recursive: true, force: true });
  }
});

/** Picks `entry` from the command palette, opened again until the workbench lists it. */
async function runCommand(page: Page, entry: string): Promise<void> {
  await eventually(async () => {
    await page.keyboard.press('F1');
    await page.waitForSelector('.quick-input-widget', { state: 'visible' });
    await page.keyboard.type(entry);
    const row = page.locator('.quick-input-list .monaco-list-row').filter({ hasText: entry }).first();
    try {
      await row.waitFor({ timeout: 5000 });
    } catch (error) {
      await page.keyboard.press('Escape');
      throw error;
    }
    await page.keyboard.press('Enter');
    return true;
  }, 60_000, 500);
}

describe('devcontainer.json with the real code-server in Chromium', () => {
  it("installs the extension it declares and puts its settings in effect in the workbench, the manifest's winning", async () => {
    const created = await postForm(`${service.url}/servers/create-with-workspace`, {
      name: 'Themed',
      github_url: `file://${join(scratch, 'themed')}`,
      settings: JSON.stringify({ 'editor.lineHeight': 30 }),
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const { id } = created.body;

    // The controller read the file, and installed the extension it asks for from the .vsix folder.
    const record = await eventually(async () => {
      const found = (await service.request('GET', `/servers/${id}`)).body;
      const installed = found.extension_status?.find((e: { id: string }) => e.id.toLowerCase() === 'devbox-test.theme');
      return found.devcontainer?.state === 'applied' && installed?.state === 'Installed' ? found : undefined;
    }, 90_000, 250);
    expect(record.devcontainer.plan).toMatchObject({
      path: '.devcontainer/devcontainer.json',
      extensions: ['devbox-test.theme'],
      settings: { 'workbench.colorTheme': THEME_LABEL, 'editor.fontSize': 23, 'editor.lineHeight': 44 },
    });

    const started = await service.request('POST', `/servers/${id}/start`);
    expect(started.status, JSON.stringify(started.body)).toBe(200);

    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    page.setDefaultTimeout(60_000);
    try {
      await page.goto(`${service.url}/vscode/${record.port}/`);
      await page.waitForSelector('.part.sidebar .explorer-folders-view', { timeout: 90_000 });

      // (a) The Extensions view lists it among the installed ones.
      await runCommand(page, 'Extensions: Show Installed Extensions');
      const item = page.locator('.extensions-viewlet .extension-list-item').filter({ hasText: THEME_LABEL });
      await item.first().waitFor({ timeout: 60_000 });
      expect(await item.first().textContent()).toContain(THEME_LABEL);
      await screenshot(page, 'devcontainer-real-editor-extensions');

      // (b) The settings in effect, on the editor's own lines: the file's font size, the
      // manifest's line height (30) over the file's (44), and the file's theme painting the editor.
      await eventually(async () => {
        await page.keyboard.press('Control+P');
        await page.waitForSelector('.quick-input-widget', { state: 'visible' });
        await page.keyboard.type('README.md');
        const row = page.locator('.quick-input-list .monaco-list-row').filter({ hasText: 'README.md' }).first();
        try {
          await row.waitFor({ timeout: 5000 });
        } catch (error) {
          await page.keyboard.press('Escape');
          throw error;
        }
        await page.keyboard.press('Enter');
        return true;
      }, 60_000, 500);
      const line = page.locator('.part.editor .monaco-editor .view-lines .view-line').filter({ hasText: 'first line of the readme' });
      await line.waitFor();
      const measured = await eventually(async () => {
        const found = await line.evaluate((el: any) => {
          const editor = el.closest('.monaco-editor');
          return {
            fontSize: getComputedStyle(el).fontSize,
            lineHeight: el.getBoundingClientRect().height,
            background: getComputedStyle(editor.querySelector('.monaco-editor-background') ?? editor).backgroundColor,
          };
        });
        return found.background === THEME_BACKGROUND ? found : undefined;
      }, 60_000, 250);
      expect(measured).toEqual({ fontSize: '23px', lineHeight: 30, background: THEME_BACKGROUND });
      await screenshot(page, 'devcontainer-real-editor-settings');
    } catch (error) {
      await screenshot(page, 'failed-devcontainer-real-editor').catch(() => undefined);
      throw error;
    } finally {
      await context.close().catch(() => undefined);
    }
  }, 300_000);
});

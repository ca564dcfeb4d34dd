// Idle means nobody is there, with the real code-server in Chromium: three servers with a short
// idle timeout, each opened in its own tab through the service's proxy. One tab is left open on
// the workbench with nobody at it; in one a person types into a file every few seconds; in one a
// terminal runs a command that prints every second. The first editor is stopped at its timeout
// (its open tab's keep-alives and the workbench's own polling do not count, nor does
// code-server's heartbeat); the other two are still running well past it.
import { existsSync, promises as fs } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveEditorBinary } from '../../src/runtime/editor-binary.ts';
import { closeBrowser, launchBrowser, screenshot } from '../helpers/browser.ts';
import { eventually, processExists, startTestService, type TestService } from '../helpers/service.ts';

const TIMEOUT_SECONDS = 30;

let service: TestService;
let browser: Browser;

beforeAll(async () => {
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

const byManifest = async (name: string) =>
  (await service.request('GET', '/servers')).body.find((r: { manifest: string }) => r.manifest === name);

/** Writes a manifest with the short idle timeout and waits until its editor runs. */
async function runningServer(name: string) {
  await fs.writeFile(join(service.settings.manifestsDir, `${name}.yaml`), [
    'apiVersion: devbox.dev/v1alpha1', 'kind: EditorServer', 'metadata:', `  name: ${name}`,
    'spec:', `  displayName: ${name}`, '  running: true', `  idleTimeoutSeconds: ${TIMEOUT_SECONDS}`, '',
  ].join('\n'));
  return eventually(async () => {
    const record = await byManifest(name);
    return record?.status === 'running' && record.pid ? record : undefined;
  }, 90_000);
}

/** A tab of its own on the server's editor, through the proxy, once the workbench shows the Explorer. */
async function openWorkbench(port: number): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.setDefaultTimeout(60_000);
  await page.goto(`${service.url}/vscode/${port}/`);
  await page.waitForSelector('.part.sidebar .explorer-folders-view', { timeout: 90_000 });
  return page;
}

/**
 * Picks `entry` from Quick Open (`key`: Control+P for files, F1 for commands), as a person does.
 * A workbench still starting may not list it yet: the picker is closed and opened again until it does.
 */
async function pick(page: Page, key: string, entry: string): Promise<void> {
  await eventually(async () => {
    await page.keyboard.press(key);
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

describe('idle with the real code-server in Chromium', () => {
  it('stops the editor whose tab is left open with nobody at it, and not those where a person types or a terminal prints', async () => {
    const pages: Page[] = [];
    let acting = true;
    let typingLoop: Promise<void> | undefined;
    try {
      // Each server is started right before its tab is opened, and each acting tab starts acting
      // as soon as it is set up, so that no setup, however slow, leaves an editor a timeout
      // without use; the tab left open comes last.

      // The terminal printing: the date every second, typed once.
      const printing = await runningServer('printing');
      const terminal = await openWorkbench(printing.port);
      pages.push(terminal);
      await pick(terminal, 'F1', 'Terminal: Create New Terminal');
      await terminal.waitForSelector('.terminal-wrapper', { state: 'visible' });
      // Each line also lands in a file, which says the command runs (the terminal draws on a canvas).
      const printed = join(printing.workspace_path, 'printed.txt');
      const lineCount = async () => (await fs.readFile(printed, 'utf8').catch(() => '')).split('\n').length - 1;
      // A terminal whose shell is still starting, or that has not taken the focus yet, may lose
      // what is typed: then the line is typed again (after Control+C, so no half line is left).
      await eventually(async () => {
        await terminal.locator('.terminal-wrapper').first().click();
        await terminal.keyboard.press('Control+C');
        await terminal.keyboard.type('while true; do date | tee -a printed.txt; sleep 1; done');
        await terminal.keyboard.press('Enter');
        return eventually(async () => (await lineCount()) >= 3, 15_000, 250);
      }, 60_000, 0);

      // The person typing: the file opened from Quick Open, a word typed every few seconds (their
      // pace, not a wait for anything) until told to stop.
      const typing = await runningServer('typing');
      expect(existsSync(typing.workspace_path)).toBe(true);
      await fs.writeFile(join(typing.workspace_path, 'notes.txt'), 'first line\n');
      const typist = await openWorkbench(typing.port);
      pages.push(typist);
      await pick(typist, 'Control+P', 'notes.txt');
      // The file's editor, in the editor area (the chat panel has an editor of its own).
      const lines = typist.locator('.part.editor .monaco-editor .view-lines');
      await lines.filter({ hasText: 'first line' }).waitFor();
      await lines.click();
      let typed = 0;
      typingLoop = (async () => {
        while (acting) {
          await typist.keyboard.type(`word${typed++} `);
          await new Promise((r) => setTimeout(r, 3000));
        }
      })();

      // The tab left open: loaded, then nothing.
      const idle = await runningServer('left-open');
      const idleOpenedAt = Date.now();
      pages.push(await openWorkbench(idle.port));
      const actingSince = Date.now();
      // The editor the tab opened is the one started, not one woken after a stop.
      expect((await byManifest('left-open')).pid).toBe(idle.pid);

      const stopped = await eventually(async () => {
        const record = await byManifest('left-open');
        return record?.status === 'stopped' && record.reason === 'IdleTimeout' ? record : undefined;
      }, (TIMEOUT_SECONDS + 60) * 1000, 500);
      expect(processExists(idle.pid)).toBe(false);
      // Not before its timeout had passed since the tab's page load (which counts).
      expect(Date.parse(stopped.idle_stopped_at) - idleOpenedAt).toBeGreaterThanOrEqual(TIMEOUT_SECONDS * 1000);
      const { events } = (await service.request('GET', `/servers/${idle.id}/events`)).body.data;
      const reason = events.find((e: { reason: string }) => e.reason === 'IdleTimeout');
      expect(reason.message).toMatch(new RegExp(`^idle for \\d+ s: no input since \\d\\d:\\d\\d:\\d\\d UTC \\(idle timeout ${TIMEOUT_SECONDS} s\\)`));
      const idleSeconds = Number(/^idle for (\d+) s/.exec(reason.message)![1]);
      expect(idleSeconds).toBeGreaterThanOrEqual(TIMEOUT_SECONDS);

      // Well past the timeout for the other two (twice it since their acting began), they still run.
      await eventually(() => Date.now() >= actingSince + 2 * TIMEOUT_SECONDS * 1000, 3 * TIMEOUT_SECONDS * 1000, 1000);
      for (const [name, started] of [['typing', typing], ['printing', printing]] as const) {
        const record = await byManifest(name);
        expect(record, name).toMatchObject({ status: 'running', pid: started.pid, reason: null });
        expect(processExists(started.pid), name).toBe(true);
      }
      expect((await lines.textContent()) ?? '').toContain(`word${typed - 2}`);
      // The terminal printed all along: a line a second since it began.
      expect(await lineCount()).toBeGreaterThanOrEqual(2 * TIMEOUT_SECONDS * 0.8);
      // The tab left open did not wake its editor (its reconnection attempts are not opening it).
      expect(await byManifest('left-open')).toMatchObject({ status: 'stopped', reason: 'IdleTimeout', pid: null, idle_stopped_at: stopped.idle_stopped_at });
      acting = false;
      await typingLoop;
      await screenshot(terminal, 'idle-terminal-printing');
    } catch (error) {
      for (const [i, page] of pages.entries()) await screenshot(page, `failed-idle-real-editor-${i}`).catch(() => undefined);
      throw error;
    } finally {
      acting = false;
      await typingLoop?.catch(() => undefined);
      for (const page of pages) await page.context().close().catch(() => undefined);
    }
  }, 300_000);
});

// A real browser opens a real code-server through the service's proxy.
import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveEditorBinary } from '../../src/runtime/editor-binary.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

// Code run in the page by waitForFunction(): the project's tsconfig has no DOM types.
declare const document: any;

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARTIFACTS = resolve(process.env.ARTIFACTS_DIR ?? 'artifacts');

let service: TestService;
let browser: Browser;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`no Chromium at ${CHROMIUM}: run npm test as root so pretest installs Debian's chromium, or apt-get install chromium, or set CHROMIUM_PATH`);
  }
  service = await startTestService({
    editorBin: resolveEditorBinary().path,
    config: { editor: { startTimeoutSeconds: 60, readyTimeoutSeconds: 60, stopGraceSeconds: 5 } },
  });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // Playwright gives the browser a fresh profile of its own.
    args: [
      '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
    ],
  });
});
afterAll(async () => {
  // The editors must go whatever the browser does: a hung close cannot skip the service's stop.
  try {
    await Promise.race([browser?.close(), new Promise((resolve) => setTimeout(resolve, 10_000))]);
  } finally {
    await service?.stop();
  }
});

describe('opening an editor in a browser', () => {
  it('renders the VS Code workbench through /vscode/{port}/ and connects its WebSocket', async () => {
    const { id, port } = (await service.request('POST', '/servers', { name: 'Browser' })).body;
    expect((await service.request('POST', `/servers/${id}/start`)).status).toBe(200);

    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const socketOpened = new Promise<string>((resolve) => {
      page.on('websocket', (ws) => {
        if (!ws.url().includes(`/vscode/${port}/`)) return;
        ws.once('framereceived', () => resolve(ws.url()));
      });
    });
    const response = await page.goto(`${service.url}/vscode/${port}/`);
    expect(response?.status()).toBe(200);
    await page.waitForSelector('.monaco-workbench', { timeout: 60_000 });
    expect(await socketOpened).toContain(`${service.url.replace('http', 'ws')}/vscode/${port}/`);
    // The workbench finished loading its parts, not just its frame.
    await page.waitForSelector('.part.activitybar', { timeout: 30_000 });
    // Usable before the screenshot: the Explorer shows the opened folder (what bench/workbench.ts waits for;
    // a startup editor tab and idle progress bars are not reliable: code-server does not always open one).
    await page.waitForSelector('.part.sidebar .explorer-folders-view', { timeout: 60_000 });

    mkdirSync(ARTIFACTS, { recursive: true });
    const shot = join(ARTIFACTS, 'vscode-workbench.png');
    await page.screenshot({ path: shot });
    expect(existsSync(shot)).toBe(true);
    // A browser is now attached: code-server reports it.
    const health = (await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.json())) as { status: string };
    expect(health.status).toBe('alive');
    await page.close();
  }, 150_000);
});

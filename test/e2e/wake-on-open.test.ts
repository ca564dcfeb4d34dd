// Wake on open in Chromium: opening the editor of a server stopped for idleness shows the starting
// page, which reloads into the editor once it answers. And the real code-server's heartbeat is not
// activity: it beats while anything is connected, a tab left open included (docs/idle.md).
import { promises as fs } from 'node:fs';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveEditorBinary } from '../../src/runtime/editor-binary.ts';
import { closeBrowser, launchBrowser, openPage } from '../helpers/browser.ts';
import { eventually, processExists, startTestService, type TestService } from '../helpers/service.ts';

let service: TestService;
let browser: Browser;

beforeAll(async () => {
  service = await startTestService({ config: { editor: { readyTimeoutSeconds: 15 } } });
  browser = await launchBrowser();
});
afterAll(async () => {
  try {
    await closeBrowser(browser);
  } finally {
    await service?.stop();
  }
});

const byManifest = async (s: TestService, name: string) =>
  (await s.request('GET', '/servers')).body.find((r: { manifest: string }) => r.manifest === name);

async function writeManifest(s: TestService, name: string, idleTimeoutSeconds: number): Promise<void> {
  await fs.writeFile(`${s.settings.manifestsDir}/${name}.yaml`, [
    'apiVersion: devbox.dev/v1alpha1', 'kind: EditorServer', 'metadata:', `  name: ${name}`,
    'spec:', `  displayName: ${name}`, '  running: true', `  idleTimeoutSeconds: ${idleTimeoutSeconds}`, '',
  ].join('\n'));
}

describe('opening an idle-stopped editor in a browser', () => {
  it('shows "Starting …", starts the editor and reloads into it', async () => {
    await writeManifest(service, 'sleepy', 2);
    const running = await eventually(async () => {
      const r = await byManifest(service, 'sleepy');
      return r?.status === 'running' ? r : undefined;
    }, 20_000);
    await eventually(async () => {
      const r = await byManifest(service, 'sleepy');
      return r?.reason === 'IdleTimeout' && r.status === 'stopped';
    }, 30_000);
    expect(processExists(running.pid)).toBe(false);

    const watched = await openPage(browser, service.url);
    // The starting page is a 503, which Chromium reports in the console.
    watched.allowConsoleError(/503/);
    try {
      const { page } = watched;
      const response = await page.goto(`${service.url}/vscode/${running.port}/`);
      expect(response?.status()).toBe(503);
      // Either the starting page is still up or it has already reloaded into the editor.
      await page.getByRole('heading', { name: /Starting sleepy…|stub editor/ }).waitFor({ timeout: 10_000 });
      await page.getByRole('heading', { name: 'stub editor' }).waitFor({ timeout: 30_000 });
      expect(page.url()).toBe(`${service.url}/vscode/${running.port}/`);
      const record = await byManifest(service, 'sleepy');
      expect(record).toMatchObject({ status: 'running', reason: null });
      expect(processExists(record.pid)).toBe(true);
      // Only its own polls: no asset, nothing off the service's host.
      expect(watched.requests.filter((r) => !r.includes(`/vscode/${running.port}/`))).toEqual([]);
      watched.assertClean();
    } finally {
      await watched.close();
    }
  }, 90_000);
});

describe('the real code-server\'s heartbeat', () => {
  it('is not activity: a page requested from the editor itself beats it, and the editor is stopped at its timeout all the same', async () => {
    const real = await startTestService({
      editorBin: resolveEditorBinary().path,
      config: { editor: { startTimeoutSeconds: 60, readyTimeoutSeconds: 60, stopGraceSeconds: 5 } },
    });
    try {
      await writeManifest(real, 'real-heart', 8);
      const running = await eventually(async () => {
        const r = await byManifest(real, 'real-heart');
        return r?.status === 'running' ? r : undefined;
      }, 60_000);
      await eventually(() => real.activity.lastActivity('real-heart') !== undefined);
      const counted = real.activity.lastActivity('real-heart')!;
      const before = Date.now();
      // Straight to code-server, not through the proxy: only its heartbeat could tell the service.
      expect((await fetch(`http://127.0.0.1:${running.port}/`)).status).toBeLessThan(500);
      const health = (await fetch(`http://127.0.0.1:${running.port}/healthz`).then((r) => r.json())) as { status: string; lastHeartbeat: number };
      expect(health.status).toBe('alive');
      expect(health.lastHeartbeat).toBeGreaterThanOrEqual(before);
      const stopped = await eventually(async () => {
        const r = await byManifest(real, 'real-heart');
        return r?.status === 'stopped' && r.reason === 'IdleTimeout' ? r : undefined;
      }, 60_000);
      expect(processExists(running.pid)).toBe(false);
      // The beat moved nothing: what the service last counted is still its start.
      expect(real.activity.lastActivity('real-heart')).toBe(counted);
      expect(stopped.message).toMatch(/^idle for \d+ s: no input since \d\d:\d\d:\d\d UTC/);
    } finally {
      await real.stop();
    }
  }, 120_000);
});

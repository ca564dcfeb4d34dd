// The page a person opens: real Chromium loads the real code-server's workbench through the
// service's proxy (/vscode/{port}/) and directly (http://127.0.0.1:{port}/), alternating, and
// times navigation → "usable", cold (a fresh browser context, empty cache) and warm (the same
// context's second load, from its cache).
//
// "Usable", the same for both: all of
//   - `.monaco-workbench` is in the page,
//   - the activity bar has its action items (`.part.activitybar .action-item`),
//   - the side bar shows the Explorer with the opened folder (`.part.sidebar .explorer-folders-view`),
//   - the editor's WebSocket (to the page's own origin) has received its first frame.
// The time is the latest of these, measured from just before `page.goto` (wall clock in this process).
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { closeBrowser, launchBrowser } from '../test/helpers/browser.ts';
import { benchPorts, median, percentile, round, sleep, startBenchService } from './harness.ts';

const READY_SELECTORS = ['.monaco-workbench', '.part.activitybar .action-item', '.part.sidebar .explorer-folders-view'];

/** One load of `url` in `page`: ms from navigation to usable, and its parts. */
async function load(page: Page, url: string): Promise<{ usable: number; dom: number; socket: number }> {
  const origin = new URL(url);
  const wsPrefix = `ws://${origin.host}${origin.pathname}`;
  let socketAt = 0;
  const socket = new Promise<void>((resolve) => {
    const onSocket = (ws: import('playwright-core').WebSocket) => {
      if (!ws.url().startsWith(wsPrefix)) return;
      ws.once('framereceived', () => {
        socketAt ||= performance.now();
        page.off('websocket', onSocket);
        resolve();
      });
    };
    page.on('websocket', onSocket);
  });
  const t0 = performance.now();
  const response = await page.goto(url, { waitUntil: 'commit', timeout: 60_000 });
  if (!response || response.status() !== 200) throw new Error(`${url}: ${response?.status()}`);
  let domAt = 0;
  const dom = (async () => {
    for (const selector of READY_SELECTORS) await page.waitForSelector(selector, { state: 'visible', timeout: 60_000 });
    domAt = performance.now();
  })();
  await Promise.race([
    Promise.all([dom, socket]),
    sleep(60_000).then(() => { throw new Error(`${url}: not usable within 60 s (dom ${domAt > 0}, socket ${socketAt > 0})`); }),
  ]);
  return { usable: Math.max(domAt, socketAt) - t0, dom: domAt - t0, socket: socketAt - t0 };
}

const newContext = (browser: Browser): Promise<BrowserContext> => browser.newContext({ viewport: { width: 1280, height: 800 } });

function stats(values: number[]) {
  return { median_ms: round(median(values), 0), p95_ms: round(percentile(values, 95), 0), runs: values.map((v) => round(v, 0)) };
}

export async function benchWorkbench(realBin: string, runs: number, offset: number) {
  const service = await startBenchService(realBin, benchPorts(offset));
  let browser: Browser | undefined;
  try {
    const { id, port, workspace_path } = await service.call('POST', '/servers', { name: 'workbench' });
    await service.call('POST', `/servers/${id}/start`);
    const query = `?folder=${encodeURIComponent(workspace_path)}`;
    const urls = { proxy: `${service.url}/vscode/${port}/${query}`, direct: `http://127.0.0.1:${port}/${query}` };
    browser = await launchBrowser();
    const times = { proxy: { cold: [] as number[], warm: [] as number[] }, direct: { cold: [] as number[], warm: [] as number[] } };
    const parts = { proxy: { dom: [] as number[], socket: [] as number[] }, direct: { dom: [] as number[], socket: [] as number[] } };
    // One unmeasured load of each first: code-server's first workbench load warms its own caches.
    for (const side of ['proxy', 'direct'] as const) {
      const context = await newContext(browser);
      await load(await context.newPage(), urls[side]);
      await context.close();
    }
    for (let run = 0; run < runs; run++) {
      const order = run % 2 === 0 ? (['proxy', 'direct'] as const) : (['direct', 'proxy'] as const);
      for (const side of order) {
        const context = await newContext(browser);
        try {
          const first = await context.newPage();
          const cold = await load(first, urls[side]);
          // Warm: a new tab in the same context (its HTTP cache filled by the cold load).
          const second = await context.newPage();
          await first.close();
          const warm = await load(second, urls[side]);
          times[side].cold.push(cold.usable);
          times[side].warm.push(warm.usable);
          parts[side].dom.push(cold.dom);
          parts[side].socket.push(cold.socket);
        } finally {
          await context.close();
        }
        // Each closed window leaves its extension host running in code-server (about 110 MB, until
        // its reconnection grace ends), on both sides alike: a 20-run pass leaves about 80.
        // Let code-server settle the closed window's connections before the next load.
        await sleep(500);
      }
    }
    const ratio = (kind: 'cold' | 'warm') => round(median(times.proxy[kind]) / median(times.direct[kind]), 2);
    return {
      usable: 'monaco-workbench + activity bar items + Explorer with the folder visible, and the editor WebSocket\'s first frame received',
      runs,
      cold: { proxy: stats(times.proxy.cold), direct: stats(times.direct.cold), ratio_of_medians: ratio('cold'), target: '≤ 1.1' },
      warm: { proxy: stats(times.proxy.warm), direct: stats(times.direct.warm), ratio_of_medians: ratio('warm'), target: '≤ 1.1' },
      cold_parts_median_ms: {
        proxy: { dom: round(median(parts.proxy.dom), 0), socket_first_frame: round(median(parts.proxy.socket), 0) },
        direct: { dom: round(median(parts.direct.dom), 0), socket_first_frame: round(median(parts.direct.socket), 0) },
      },
    };
  } finally {
    await closeBrowser(browser);
    await service.close();
  }
}

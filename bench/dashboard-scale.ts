// The dashboard at the size of a course or a team, in real Chromium against the compiled service:
// N stopped manifests landed as files at once, then, each in a fresh browser context, navigation
// start → first useful paint (server rows on screen and the count of servers right), and the
// filter box: the name of one server typed in → that one row shown. Measured at each N, smallest
// first, so the slope shows; the page's row elements and DOM size are reported beside.
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { closeBrowser, launchBrowser } from '../test/helpers/browser.ts';
import { ensureWebBuilt } from './dashboard.ts';
import { percentile, round, sleep, startBenchService, STUB_EDITOR, type BenchService } from './harness.ts';

const PAINT_TARGET_MS = 2000;
const FILTER_TARGET_MS = 100;

// Code run in the page: the project's tsconfig has no DOM types.
declare const window: any, document: any, MutationObserver: any, PerformanceObserver: any, requestAnimationFrame: any;

const seat = (i: number) => `seat-${String(i).padStart(5, '0')}`;

function manifest(name: string): string {
  return `apiVersion: devbox.dev/v1alpha1\nkind: EditorServer\nmetadata:\n  name: ${name}\nspec:\n  running: false\n`;
}

/** Lands `total` manifests at once (written aside, then each renamed in) and waits until GET /servers lists them all. */
async function land(service: BenchService, total: number): Promise<{ listed_s: number; list_bytes: number }> {
  const manifests = join(service.root, 'manifests');
  const staging = join(service.root, 'staging');
  await fs.mkdir(staging, { recursive: true });
  for (let i = 0; i < total; i++) await fs.writeFile(join(staging, `${seat(i)}.yaml`), manifest(seat(i)));
  const landed = performance.now();
  for (let i = 0; i < total; i++) await fs.rename(join(staging, `${seat(i)}.yaml`), join(manifests, `${seat(i)}.yaml`));
  const deadline = Date.now() + 600_000;
  for (;;) {
    const response = await fetch(`${service.url}/servers`).catch(() => undefined);
    const bytes = response?.ok ? Buffer.from(await response.arrayBuffer()) : undefined;
    const listed = bytes ? (JSON.parse(bytes.toString()) as unknown[]).length : 0;
    if (bytes && listed === total) return { listed_s: round((performance.now() - landed) / 1000, 1), list_bytes: bytes.length };
    if (Date.now() > deadline) throw new Error(`${listed} of ${total} servers listed after 600 s`);
    await sleep(500);
  }
}

/**
 * In the page, before anything of it runs: `__paintAt`, performance.now() (ms since navigation
 * start) when the table named Servers first shows a server row and the count above it reads
 * `want` servers. Found the way web/README.md lays the page out: the table by its accessible
 * name, the count in the polite live region under the heading.
 */
function instrumentPaint(want: number) {
  const w = window;
  w.__paintAt = null;
  const look = () => {
    if (w.__paintAt !== null) return;
    const table = document.querySelector('table[aria-label="Servers"]');
    if (!table?.querySelector('tbody tr a')) return;
    const summary = [...document.querySelectorAll('[aria-live="polite"]')].map((e: any) => e.textContent).join(' ');
    const count = /([\d,]+) servers?\b/.exec(summary);
    if (count && Number(count[1].replace(/,/g, '')) === want) {
      w.__paintAt = performance.now();
      observer.disconnect();
    }
  };
  const observer = new MutationObserver(look);
  const start = () => observer.observe(document.documentElement, { subtree: true, childList: true, characterData: true });
  if (document.documentElement) start();
  else document.addEventListener('DOMContentLoaded', start);
}

/** What the page holds once painted: row elements of the table (server rows and spacers), server rows, all elements. */
function pageSize(page: Page) {
  return page.evaluate(() => {
    const table = document.querySelector('table[aria-label="Servers"]');
    return {
      row_elements: table.querySelectorAll('tbody tr').length,
      server_rows: [...table.querySelectorAll('tbody tr')].filter((r: any) => r.querySelector('a')).length,
      dom_elements: document.getElementsByTagName('*').length,
    };
  });
}

/**
 * The name of one server put in the filter box at once (as pasted) → the table shows that one
 * row: performance.now() at the input event, at the DOM holding the one row (a MutationObserver),
 * and at the next frame after it (the browser has painted the one row by then).
 */
function filterOnce(page: Page, name: string): Promise<{ dom_ms: number; frame_ms: number }> {
  return page.evaluate((wanted) => new Promise((resolve, reject) => {
    const table = document.querySelector('table[aria-label="Servers"]');
    const input = document.querySelector('input[aria-label="Filter servers"]');
    const rows = () => [...table.querySelectorAll('tbody tr')].filter((r: any) => r.querySelector('a'));
    const done = () => {
      const shown = rows();
      return shown.length === 1 && shown[0].querySelector('a').textContent.trim() === wanted;
    };
    let started = 0;
    const timeout = setTimeout(() => reject(new Error(`the filter never showed ${wanted} alone`)), 10_000);
    const finish = () => {
      const dom = performance.now();
      observer.disconnect();
      clearTimeout(timeout);
      requestAnimationFrame(() => setTimeout(() => resolve({ dom_ms: dom - started, frame_ms: performance.now() - started })));
    };
    const observer = new MutationObserver(() => {
      if (done()) finish();
    });
    observer.observe(table, { subtree: true, childList: true, characterData: true });
    input.value = wanted;
    started = performance.now();
    input.dispatchEvent(new Event('input', { bubbles: true }));
    if (done()) finish();
  }), name);
}

/** Clears the filter and waits until the table shows the unfiltered count again. */
async function clearFilter(page: Page, total: number): Promise<void> {
  await page.getByRole('searchbox', { name: 'Filter servers' }).fill('');
  await page.waitForFunction((want) => {
    const text = [...document.querySelectorAll('[aria-live="polite"]')].map((e: any) => e.textContent).join(' ');
    const count = /([\d,]+) servers?\b/.exec(text);
    return count && Number(count[1].replace(/,/g, '')) === want && !/match/.test(text);
  }, total, { timeout: 30_000 });
}

/**
 * Typing a server's name key by key: the longest time from a keystroke to the frame that shows
 * its outcome, from the Event Timing API (entries of 16 ms and more; quicker ones are not
 * reported, so 0 means every keystroke was painted within 16 ms).
 */
async function typing(page: Page, name: string): Promise<{ keystrokes: number; slowest_ms: number; over_100_ms: number }> {
  await page.evaluate(() => {
    window.__keyDurations = [];
    window.__keyObserver = new PerformanceObserver((list: any) => {
      for (const entry of list.getEntries()) if (entry.interactionId) window.__keyDurations.push(entry.duration);
    });
    window.__keyObserver.observe({ type: 'event', durationThreshold: 16 });
  });
  const box = page.getByRole('searchbox', { name: 'Filter servers' });
  await box.focus();
  await page.keyboard.type(name, { delay: 80 });
  await page.waitForFunction((wanted) => {
    const shown = [...document.querySelectorAll('table[aria-label="Servers"] tbody tr')].filter((r: any) => r.querySelector('a'));
    return shown.length === 1 && shown[0].querySelector('a').textContent.trim() === wanted;
  }, name, { timeout: 30_000 });
  await sleep(300);
  const durations: number[] = await page.evaluate(() => {
    window.__keyObserver.disconnect();
    return window.__keyDurations;
  });
  return { keystrokes: name.length, slowest_ms: round(Math.max(0, ...durations), 1), over_100_ms: durations.filter((d) => d > 100).length };
}

/** The dashboard at one size: cold paints, then the filter in the last page. */
async function measureAt(browser: Browser, service: BenchService, total: number, runs: number, filters: number) {
  const paints: number[] = [];
  const filterDom: number[] = [];
  const filterFrame: number[] = [];
  let size: Awaited<ReturnType<typeof pageSize>> | undefined;
  let typed: Awaited<ReturnType<typeof typing>> | undefined;
  // The first context warms the service and the OS caches; it is not counted.
  for (let i = 0; i <= runs; i++) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    try {
      const page = await context.newPage();
      await page.addInitScript(instrumentPaint, total);
      await page.goto(`${service.url}/`);
      await page.waitForFunction(() => window.__paintAt !== null, undefined, { timeout: 120_000 });
      if (i === 0) continue;
      paints.push(await page.evaluate(() => window.__paintAt));
      if (i < runs) continue;
      // The last page: what it holds, then the filter, several servers spread over the list.
      await sleep(500);
      size = await pageSize(page);
      for (let f = 0; f < filters; f++) {
        const name = seat(Math.floor(((f + 0.5) * total) / filters));
        const { dom_ms, frame_ms } = await filterOnce(page, name);
        filterDom.push(dom_ms);
        filterFrame.push(frame_ms);
        await clearFilter(page, total);
      }
      typed = await typing(page, seat(total - 1));
    } finally {
      await context.close();
    }
  }
  return {
    runs,
    first_useful_paint_median_ms: round(percentile(paints, 50), 1),
    first_useful_paint_p95_ms: round(percentile(paints, 95), 1),
    filter_to_one_row_median_ms: round(percentile(filterFrame, 50), 1),
    filter_to_one_row_p95_ms: round(percentile(filterFrame, 95), 1),
    filter_to_one_row_dom_p95_ms: round(percentile(filterDom, 95), 1),
    filters,
    typing_filter: typed,
    page: size,
    measured: 'paint: navigation start → a server row in the table and the count reading every server (MutationObserver); filter: the input event → the frame after the DOM shows that one row',
  };
}

/**
 * The dashboard against a service that already lists `total` servers named seat-00000…
 * (bench/scale.ts lands them): paint and filter, in a browser of its own.
 */
export async function measureDashboard(service: BenchService, total: number, quick: boolean) {
  ensureWebBuilt();
  const browser = await launchBrowser();
  try {
    const figures = await measureAt(browser, service, total, quick ? 3 : 5, quick ? 5 : 10);
    return { ...figures, meets_targets: figures.first_useful_paint_p95_ms <= PAINT_TARGET_MS && figures.filter_to_one_row_p95_ms <= FILTER_TARGET_MS };
  } finally {
    await closeBrowser(browser);
  }
}

/**
 * `npm run bench -- dashboard-scale`: at 1,000 and 10,000 stopped servers (quick: 1,000 and
 * 2,000), each size on a fresh service.
 */
export async function benchDashboardScale(quick: boolean, offset: number) {
  ensureWebBuilt();
  const sizes = quick ? [1000, 2000] : [1000, 10_000];
  const results: Record<string, unknown> = {};
  for (const total of sizes) {
    // A port each (stopped servers keep theirs), clear of the other sections' ranges.
    const min = 45_000 + offset * 10;
    const service = await startBenchService(STUB_EDITOR, { min, max: min + total + 100 });
    let browser: Browser | undefined;
    try {
      // A size the service does not list in time is reported as such, beside the others.
      const landed = await land(service, total).catch((error: Error) => error);
      if (landed instanceof Error) {
        results[`${total}_servers`] = { servers: total, error: landed.message };
        continue;
      }
      browser = await launchBrowser();
      const figures = await measureAt(browser, service, total, quick ? 3 : 7, quick ? 5 : 10);
      results[`${total}_servers`] = {
        servers: total,
        landed_to_listed_s: landed.listed_s,
        list_bytes: landed.list_bytes,
        ...figures,
        paint_target_ms: PAINT_TARGET_MS,
        filter_target_ms: FILTER_TARGET_MS,
        meets_targets: figures.first_useful_paint_p95_ms <= PAINT_TARGET_MS && figures.filter_to_one_row_p95_ms <= FILTER_TARGET_MS,
      };
    } finally {
      await closeBrowser(browser);
      await service.close();
    }
  }
  return results;
}

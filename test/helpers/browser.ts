// Real Chromium for the browser tests: Debian's chromium driven by playwright-core, pages that
// record every request they make (and refuse any that would leave the service's own address),
// the console and page errors they raise, and screenshots saved where CI keeps them.
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const ARTIFACTS = resolve(process.env.ARTIFACTS_DIR ?? 'artifacts');

/**
 * Headless Chromium with the flags of machine-facts (without the networking ones it tries hosts
 * it cannot reach). Playwright launches it with a fresh profile in a temp folder of its own
 * (it refuses a --user-data-dir in args) and removes that folder on close.
 */
export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`no Chromium at ${CHROMIUM}: run npm test as root so pretest installs Debian's chromium, or apt-get install chromium, or set CHROMIUM_PATH`);
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
    ],
  });
}

/** Closes the browser, bounded: a hung close must not keep the service (and its editors) up. */
export async function closeBrowser(browser: Browser | undefined): Promise<void> {
  await Promise.race([browser?.close(), new Promise((r) => setTimeout(r, 10_000))]);
}

export interface WatchedPage {
  page: Page;
  context: BrowserContext;
  /** Every request the page (and any tab it opened) made: `METHOD url`, WebSockets as `WS url`. */
  requests: string[];
  /** Requests to any other host than the service's, which were aborted. */
  offHost: string[];
  consoleErrors: string[];
  pageErrors: string[];
  /** Console and page errors of tabs the page opened (such as an editor's), kept apart. */
  otherTabErrors: string[];
  /** Console errors matching this are expected (e.g. Chromium's "Failed to load resource: … 409" for an API error the test provokes). */
  allowConsoleError(pattern: RegExp): void;
  /**
   * Throws unless no request left the service's host and no console or page error was raised,
   * in the page and (unless `otherTabs` is false) in tabs it opened.
   */
  assertClean(options?: { otherTabs?: boolean }): void;
  close(): Promise<void>;
}

export interface PageOptions {
  viewport?: { width: number; height: number };
  colorScheme?: 'light' | 'dark';
  /** Downloads are accepted (the logs view's Download button). */
  acceptDownloads?: boolean;
}

/** URLs that never leave the page: inline data, blobs, about:blank. */
const LOCAL_SCHEMES = new Set(['data:', 'blob:', 'about:', 'chrome-error:']);

/**
 * A new context and page for the service at `serviceUrl`. Requests (HTTP and WebSocket) to any
 * other host, or to 127.0.0.1 on another port, are recorded in `offHost` and aborted.
 */
export async function openPage(browser: Browser, serviceUrl: string, options: PageOptions = {}): Promise<WatchedPage> {
  const own = new URL(serviceUrl);
  const allowed = (raw: string | URL) => {
    const url = typeof raw === 'string' ? new URL(raw) : raw;
    if (LOCAL_SCHEMES.has(url.protocol)) return true;
    return ['http:', 'https:', 'ws:', 'wss:'].includes(url.protocol) && url.hostname === own.hostname && url.port === own.port;
  };
  const context = await browser.newContext({
    viewport: options.viewport ?? { width: 1280, height: 800 },
    colorScheme: options.colorScheme ?? 'light',
    acceptDownloads: options.acceptDownloads ?? true,
    // Times are shown in the user's zone: a fixed one keeps screenshots comparable.
    timezoneId: 'UTC',
    locale: 'en-US',
  });
  const requests: string[] = [];
  const offHost: string[] = [];
  const consoleErrors: string[] = [];
  const pageErrors: string[] = [];
  const otherTabErrors: string[] = [];
  const allowedErrors: RegExp[] = [];

  context.on('request', (request) => {
    requests.push(`${request.method()} ${request.url()}`);
    if (!allowed(request.url())) offHost.push(`${request.method()} ${request.url()}`);
  });
  await context.route((url) => !allowed(url), (route) => route.abort('blockedbyclient'));
  await context.routeWebSocket((url) => !allowed(url), (ws) => {
    requests.push(`WS ${ws.url()}`);
    offHost.push(`WS ${ws.url()}`);
    ws.close({ code: 1008, reason: 'off-host' });
  });
  let first: Page | undefined;
  const watch = (page: Page) => {
    first ??= page;
    const mine = page === first;
    page.on('websocket', (ws) => requests.push(`WS ${ws.url()}`));
    page.on('console', (message) => {
      if (message.type() !== 'error') return;
      const where = message.location();
      const text = `${message.text()}${where.url ? ` (${where.url}:${where.lineNumber})` : ''}`;
      (mine ? consoleErrors : otherTabErrors).push(text);
    });
    page.on('pageerror', (error) => (mine ? pageErrors : otherTabErrors).push(error.stack ?? String(error)));
  };
  context.on('page', watch);
  const page = await context.newPage();

  return {
    page, context, requests, offHost, consoleErrors, pageErrors, otherTabErrors,
    allowConsoleError: (pattern) => void allowedErrors.push(pattern),
    assertClean({ otherTabs = true } = {}) {
      const unexpected = consoleErrors.filter((text) => !allowedErrors.some((p) => p.test(text)));
      const problems = [
        ...offHost.map((r) => `request off the service's host: ${r}`),
        ...unexpected.map((t) => `console error: ${t}`),
        ...pageErrors.map((t) => `page error: ${t}`),
        ...(otherTabs ? otherTabErrors.map((t) => `error in another tab: ${t}`) : []),
      ];
      if (problems.length > 0) throw new Error(`the page was not clean:\n${problems.join('\n')}`);
    },
    async close() {
      await Promise.race([context.close(), new Promise((r) => setTimeout(r, 10_000))]);
    },
  };
}

/** Saves a PNG of the page (the viewport, or the whole page) as ARTIFACTS_DIR/<name>.png; returns its path. */
export async function screenshot(page: Page, name: string, options: { fullPage?: boolean; path?: string } = {}): Promise<string> {
  const path = options.path ?? join(ARTIFACTS, `${name}.png`);
  mkdirSync(dirname(path), { recursive: true });
  await page.screenshot({ path, fullPage: options.fullPage ?? false, animations: 'disabled', caret: 'hide' });
  return path;
}

/**
 * Runs `body` on a fresh page of the service with `timeoutMs` as its default wait; afterwards the
 * page must be clean (no off-host request, no error). A failure leaves a screenshot `failed-<label>`.
 */
export async function withCleanPage(browser: Browser, serviceUrl: string, label: string, timeoutMs: number,
  body: (watched: WatchedPage) => Promise<void>, options: PageOptions = {}): Promise<void> {
  const watched = await openPage(browser, serviceUrl, options);
  watched.page.setDefaultTimeout(timeoutMs);
  try {
    await body(watched);
    watched.assertClean();
  } catch (error) {
    await screenshot(watched.page, `failed-${label}`).catch(() => undefined);
    throw error;
  } finally {
    await watched.close();
  }
}

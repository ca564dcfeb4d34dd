// The dashboard's servers table as a person finds it in real Chromium (by role and accessible
// name, as web/README.md lists them): its rows and cells, a row's status, its actions menu, and a
// click that must make its API request. Shared by the browser tests of every runtime.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Locator, Page } from 'playwright-core';
import { eventually } from './wait.ts';

const ROOT = resolve(new URL('../..', import.meta.url).pathname);
/** Generous: a 2-core shared machine. Nothing here is timed; this only bounds a hang. */
export const UI_WAIT = 20_000;

/** The page is built by `npm run build:web` into dist/web/; build it when it is missing. */
export function ensureWebBuilt(): void {
  if (existsSync(join(ROOT, 'dist', 'web', 'index.html'))) return;
  const scripts = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts ?? {};
  if (!scripts['build:web']) throw new Error('dist/web/index.html is missing and package.json has no build:web script');
  execFileSync('npm', ['run', 'build:web', '--silent'], { cwd: ROOT, stdio: 'inherit' });
}

export const serversTable = (page: Page) => page.getByRole('table', { name: 'Servers' });
/** The row whose Name cell links the server's name. */
export const rowOf = (page: Page, name: string) =>
  serversTable(page).getByRole('row').filter({ has: page.getByRole('link', { name, exact: true }) });

/** A cell of a server's row, by its column header's text (Name may be a rowheader or a cell). */
export async function cellOf(page: Page, name: string, column: string): Promise<Locator> {
  const headers = (await serversTable(page).getByRole('columnheader').allInnerTexts()).map((h) => h.trim().toLowerCase());
  const index = headers.findIndex((h) => h.startsWith(column.toLowerCase()));
  if (index < 0) throw new Error(`no column "${column}" among ${JSON.stringify(headers)}`);
  const row = rowOf(page, name);
  return row.getByRole('cell').or(row.getByRole('rowheader')).nth(index);
}

/** Text of a locator without waiting long (for polling). */
export async function textOf(locator: Locator): Promise<string> {
  return ((await locator.textContent({ timeout: 1000 })) ?? '').replace(/\s+/g, ' ').trim();
}

/**
 * Waits until the server's Status cell starts with `word` (and contains `reason`, if given).
 * A leading mark (a shape drawn beside the word, hidden from assistive technology) is skipped.
 */
export async function statusShows(page: Page, name: string, word: string, reason?: string, timeoutMs = UI_WAIT): Promise<string> {
  return eventually(async () => {
    const text = (await textOf(await cellOf(page, name, 'Status'))).replace(/^[^a-z]+/i, '');
    return text.toLowerCase().startsWith(word) && (!reason || text.includes(reason)) ? text : undefined;
  }, timeoutMs, 100);
}

/** Clicks a button and waits for the request it should make: proof the page asked the API. */
export async function clickAndAwait(page: Page, button: Locator, method: string, path: RegExp) {
  const [response] = await Promise.all([
    page.waitForResponse((r) => r.request().method() === method && path.test(new URL(r.url()).pathname), { timeout: UI_WAIT * 2 }),
    button.click(),
  ]);
  return response;
}

/**
 * Opens a row's "More actions for {name}" menu and gives its item: Stop, Restart, Refresh, Logs
 * and Delete… live there (the row shows Open or Start itself).
 */
export async function menuItem(page: Page, name: string, item: string | RegExp): Promise<Locator> {
  await page.getByRole('button', { name: `More actions for ${name}`, exact: true }).click();
  const menu = page.getByRole('menu', { name: `More actions for ${name}`, exact: true });
  await menu.waitFor();
  return menu.getByRole('menuitem', { name: item });
}

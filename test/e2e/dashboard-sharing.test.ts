// Sharing through the dashboard in real Chromium, two people signed in (identity headers, as the
// platform's front door sends them) under `access: owner`: the owner shares a server from its
// Access panel, the other person's list then shows it marked shared and its page lets them use it
// but not change who has access; a revoke takes it from their list again.
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { closeBrowser, launchBrowser, openPage, screenshot, type WatchedPage } from '../helpers/browser.ts';
import { cellOf, clickAndAwait, ensureWebBuilt, rowOf, serversTable, textOf, UI_WAIT } from '../helpers/dashboard-page.ts';
import { eventually, startTestService, type TestService } from '../helpers/service.ts';

const ALICE = { 'X-Forwarded-Email': 'alice@example.com', 'X-Forwarded-User': '1001@42' };
const BOB = { 'X-Forwarded-Email': 'bob@example.com', 'X-Forwarded-User': '1002@42' };

let service: TestService;
let browser: Browser;
const pages: WatchedPage[] = [];

/** A page of the dashboard as this person, signed in. */
async function pageAs(who: Record<string, string>): Promise<WatchedPage> {
  const watched = await openPage(browser, service.url);
  watched.page.setDefaultTimeout(UI_WAIT);
  await watched.context.setExtraHTTPHeaders(who);
  pages.push(watched);
  return watched;
}

beforeAll(async () => {
  ensureWebBuilt();
  const root = await fs.mkdtemp(join(tmpdir(), 'devbox-e2e-sharing-'));
  service = await startTestService({ root, requireIdentity: true, config: { access: 'owner', admins: [] } });
  browser = await launchBrowser();
});
afterAll(async () => {
  for (const watched of pages) await watched.close();
  await closeBrowser(browser);
  await service?.stop();
});

describe('the Access panel', () => {
  it('shares a server with a person, who then finds it in their list marked shared, and revokes it again', async () => {
    const notes = (await service.request('POST', '/servers', { name: 'Team notes' }, ALICE)).body;
    await service.request('POST', '/servers', { name: 'Bob scratch' }, BOB);
    const manifest = async () => parse(await fs.readFile(join(service.settings.manifestsDir, 'team-notes.yaml'), 'utf8'));

    const bob = await pageAs(BOB);
    await bob.page.goto(`${service.url}/#/`);
    await rowOf(bob.page, 'Bob scratch').waitFor();
    expect(await rowOf(bob.page, 'Team notes').count()).toBe(0);
    expect(await textOf(await cellOf(bob.page, 'Bob scratch', 'Name'))).not.toContain('shared');

    const alice = await pageAs(ALICE);
    await alice.page.goto(`${service.url}/#/servers/${notes.id}`);
    const panel = alice.page.getByRole('region', { name: 'Access' });
    await panel.getByText('Not shared with anyone.').waitFor();
    await panel.getByRole('textbox', { name: 'Share with' }).fill('Bob@Example.com');
    const shared = await clickAndAwait(alice.page, panel.getByRole('button', { name: 'Share', exact: true }), 'POST', /\/servers\/[^/]+\/access$/);
    expect(shared.status()).toBe(200);
    const people = panel.getByRole('list', { name: 'People Team notes is shared with' });
    await people.getByText('bob@example.com').waitFor();
    await panel.getByRole('button', { name: "Revoke bob@example.com's access" }).waitFor();
    expect((await manifest()).spec.access).toEqual({ sharedWith: ['bob@example.com'] });
    await screenshot(alice.page, 'dashboard-sharing-owner', { fullPage: true });

    // Bob's list, fed by its watch stream, gains the server with the mark; its page is his to use, not to share.
    await rowOf(bob.page, 'Team notes').waitFor();
    expect(await textOf(await cellOf(bob.page, 'Team notes', 'Name'))).toMatch(/Team notes\s*shared/);
    await screenshot(bob.page, 'dashboard-sharing-list');
    await bob.page.getByRole('link', { name: 'Team notes', exact: true }).click();
    const bobsPanel = bob.page.getByRole('region', { name: 'Access' });
    await bobsPanel.getByText(/^Shared with you/).waitFor();
    expect(await bobsPanel.getByRole('textbox', { name: 'Share with' }).count()).toBe(0);
    expect(await bobsPanel.getByRole('button', { name: /Revoke/ }).count()).toBe(0);
    await bob.page.getByRole('button', { name: /^Start/ }).first().waitFor();
    // He may use it, not delete it: the page does not offer it (Alice's does).
    expect(await bob.page.getByRole('button', { name: /^Delete/ }).count()).toBe(0);
    await alice.page.getByRole('button', { name: /^Delete Team notes/ }).waitFor();

    // Revoked: the row goes from Bob's list, and his page of it says it is not found.
    await bob.page.goto(`${service.url}/#/`);
    await rowOf(bob.page, 'Team notes').waitFor();
    const revoked = await clickAndAwait(alice.page, panel.getByRole('button', { name: "Revoke bob@example.com's access" }), 'DELETE', /\/access\/bob%40example\.com$/);
    expect(revoked.status()).toBe(200);
    await panel.getByText('Not shared with anyone.').waitFor();
    await eventually(async () => (await rowOf(bob.page, 'Team notes').count()) === 0, UI_WAIT);
    await rowOf(bob.page, 'Bob scratch').waitFor();
    expect(await serversTable(bob.page).getByRole('link', { name: 'Team notes' }).count()).toBe(0);
    expect((await manifest()).spec.access).toEqual({ sharedWith: [] });
    alice.assertClean();
    bob.assertClean();
  });
});

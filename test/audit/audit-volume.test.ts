// The audit trail kept in a Unity Catalog volume, as a Databricks app has it (the real SDK against
// the loopback fake of the Files API): copied there at shutdown, taken back by a new container
// whose data folder is empty, and continued with the same chain.
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { AuditEntry } from '../../src/audit/entry.ts';
import { killEditors, startTestService, type TestService } from '../helpers/service.ts';
import { startFakeWorkspace } from '../platform/fake-workspace.ts';
import { fakeWorkspaceSettings, tempHome } from '../platform/platform-settings.ts';

const VOLUME = '/Volumes/main/team/devbox';
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('the audit trail in a Unity Catalog volume', () => {
  it('is copied to the volume and continued by a new container', async () => {
    const base = await fs.mkdtemp(join(tmpdir(), 'devbox-audit-volume-'));
    cleanups.push(() => fs.rm(base, { recursive: true, force: true }));
    const workspace = await startFakeWorkspace();
    cleanups.push(() => workspace.close());
    workspace.addVolume(VOLUME);
    const home = await tempHome();
    cleanups.push(() => fs.rm(home, { recursive: true, force: true }));
    const open = async (root: string) => {
      const service = await startTestService({ root, persistTo: `dbfs:${VOLUME}/prod`, platform: fakeWorkspaceSettings(workspace, home) });
      cleanups.push(async () => {
        await service.close({ stopEditors: true }).catch(() => undefined);
        await killEditors(service.settings.dataDir);
      });
      return service;
    };
    const entries = async (service: TestService): Promise<AuditEntry[]> => (await service.request('GET', '/audit?limit=500')).body.entries;

    const first = await open(join(base, 'first'));
    expect((await first.request('POST', '/servers', { name: 'Lakehouse' })).status).toBe(201);
    const last = (await entries(first))[0];
    expect(last).toMatchObject({ action: 'create', server_name: 'lakehouse' });
    await first.close({ stopEditors: true });
    expect(workspace.volumeFilePaths()).toContain(`${VOLUME}/prod/audit/audit.jsonl`);

    // A new container: another, empty, data folder.
    const second = await open(join(base, 'second'));
    expect((await second.request('GET', '/health')).body.audit).toMatchObject({ last_seq: last.seq, last_hash: last.hash, kept_at: `volume ${VOLUME}/prod/audit/` });
    expect((await second.request('POST', '/servers', { name: 'Second' })).status).toBe(201);
    const now = await entries(second);
    expect(now.find((e) => e.seq === last.seq + 1)).toMatchObject({ prev: last.hash });
    expect(now.some((e) => e.seq === 1)).toBe(true);
    expect((await second.request('GET', '/audit/verify')).body).toMatchObject({ ok: true, first_seq: 1 });
  }, 60_000);
});

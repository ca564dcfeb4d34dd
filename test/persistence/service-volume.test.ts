// A redeploy with a Unity Catalog volume as the target, as a Databricks app has it: the real SDK
// against the loopback fake of the Files API, signed in as the app's service principal. The same
// round trip as with a folder, through refusals, 5xx answers, dropped uploads, slow answers and
// listings that page; and no secret ends up in the log, the records or the volume.
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually, killEditors, startTestService, type TestService } from '../helpers/service.ts';
import { startFakeWorkspace, type FakeWorkspace } from '../platform/fake-workspace.ts';
import { fakeWorkspaceSettings, tempHome } from '../platform/platform-settings.ts';
import { hashTree, recordWhen, restoredWhen, sorted, writeFiles } from './service-fixtures.ts';

const VOLUME = '/Volumes/main/team/devbox';
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setUp(): Promise<{ workspace: FakeWorkspace; open: () => Promise<TestService>; root: string }> {
  const base = await fs.mkdtemp(join(tmpdir(), 'devbox-persist-volume-'));
  cleanups.push(() => fs.rm(base, { recursive: true, force: true }));
  const workspace = await startFakeWorkspace();
  cleanups.push(() => workspace.close());
  workspace.addVolume(VOLUME);
  const home = await tempHome();
  cleanups.push(() => fs.rm(home, { recursive: true, force: true }));
  const root = join(base, 'machine');
  const open = async () => {
    const service = await startTestService({ root, persistTo: `dbfs:${VOLUME}/prod`, platform: fakeWorkspaceSettings(workspace, home) });
    cleanups.push(async () => {
      await service.close({ stopEditors: true }).catch(() => undefined);
      await killEditors(service.settings.dataDir);
    });
    return service;
  };
  return { workspace, open, root };
}

describe('a Unity Catalog volume as the target', () => {
  it('brings a server back after a redeploy, through 5xx answers, a dropped upload, slow answers and paged listings', async () => {
    const { workspace, open, root } = await setUp();
    const first = await open();
    const created = await first.request('POST', '/servers', { name: 'Lakehouse' });
    expect(created.status).toBe(201);
    expect((await first.request('POST', `/servers/${created.body.id}/start`)).status).toBe(200);
    const workspaceDir = created.body.workspace_path as string;
    await writeFiles(join(workspaceDir, 'src'), 300, 700, 'lake');
    await fs.writeFile(join(workspaceDir, 'big.bin'), Buffer.alloc(3 * 1024 * 1024, 7));
    const before = sorted(await hashTree(workspaceDir));

    // Hostile weather on the way: two 503s, one upload cut off mid-body, 20 ms a request, pages of 3.
    workspace.filesFaults({ failNext: { status: 503, count: 2 }, dropNext: 1, delayMs: 20, pageSize: 3 });
    const summary = await first.persistence!.snapshotAll('shutdown', 12_000);
    expect(summary.failed).toEqual([]);
    expect(workspace.volumeFilePaths().some((path) => path.startsWith(`${VOLUME}/prod/servers/lakehouse/snapshots/`))).toBe(true);
    await first.close({ stopEditors: true });
    await killEditors(first.settings.dataDir);
    await fs.rm(join(root, 'manifests'), { recursive: true, force: true });
    await fs.rm(first.settings.dataDir, { recursive: true, force: true });

    const second = await open();
    const record = await restoredWhen(second, created.body.id, 'Running');
    expect(record.manifest).toBe('lakehouse');
    expect(sorted(await hashTree(record.workspace_path))).toEqual(before);
    workspace.filesFaults({});

    // No secret anywhere: not in the log, the records, the health page, nor the volume's objects.
    const secrets = [workspace.clientSecret, ...workspace.accessTokens];
    const seen = [
      ...first.lines, ...second.lines,
      JSON.stringify((await second.request('GET', '/servers')).body),
      JSON.stringify((await second.request('GET', '/health')).body),
      ...workspace.volumeFilePaths().filter((p) => p.endsWith('.json')).map((p) => workspace.volumeFile(p)!.toString('utf8')),
    ].join('\n');
    for (const secret of secrets) expect(seen.includes(secret)).toBe(false);
  }, 120_000);

  it('keeps serving while the volume refuses, says what to do, and recovers when it is granted', async () => {
    const { workspace, open } = await setUp();
    const service = await open();
    const created = await service.request('POST', '/servers', { name: 'Refused' });
    await fs.writeFile(join(created.body.workspace_path, 'work.txt'), 'kept later\n');
    workspace.filesFaults({ deny: true });
    const refused = await service.request('POST', `/servers/${created.body.id}/snapshot`);
    expect(refused.status).toBe(503);
    expect(refused.body.error.message).toMatch(/add the volume to the app as a resource with Can read and write/);
    const health = await eventually(async () => {
      const { body } = await service.request('GET', '/health');
      return body.persistence?.state === 'failing' ? body : undefined;
    });
    expect(health.status).toBe('degraded');
    expect(health.persistence.hint).toMatch(/WRITE VOLUME/);
    // Still serving: the API answers and editors start.
    expect((await service.request('POST', `/servers/${created.body.id}/start`)).status).toBe(200);

    workspace.filesFaults({});
    const taken = await service.request('POST', `/servers/${created.body.id}/snapshot`);
    expect(taken.status, JSON.stringify(taken.body)).toBe(200);
    await eventually(async () => (await service.request('GET', '/health')).body.persistence.state === 'ok');
    expect((await recordWhen(service, created.body.id, 'running')).persistence.last_error).toBeNull();
  }, 60_000);
});

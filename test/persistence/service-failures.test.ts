// A persistence target that fails leaves the service serving: the health page says what to do,
// the API's snapshot answers 503 with it, and everything recovers once the target works again.
// A mistaken delete is undone from the snapshots kept, until retainDeletedDays have passed.
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/settings.ts';
import { eventually, startTestService, type TestService } from '../helpers/service.ts';
import { hashTree, restoredWhen, sorted } from './service-fixtures.ts';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function scratch(): Promise<string> {
  const dir = await fs.mkdtemp(join(tmpdir(), 'devbox-keep-'));
  cleanups.push(() => fs.rm(dir, { recursive: true, force: true }));
  return dir;
}

const health = async (service: TestService) => (await service.request('GET', '/health')).body;

describe('a target that fails', () => {
  it('leaves the service serving, says failing with what to do, and recovers when the target works again', async () => {
    const base = await scratch();
    const keep = join(base, 'keep');
    // Not a folder: the target cannot be used until someone makes it one.
    await fs.writeFile(keep, 'not a folder\n');
    const service = await startTestService({ persistTo: keep });
    cleanups.push(() => service.stop());

    const failing = await eventually(async () => {
      const body = await health(service);
      return body.persistence.state === 'failing' ? body : undefined;
    });
    expect(failing.status).toBe('degraded');
    expect(failing.persistence.hint).toMatch(/create .*keep|DEVBOX_PERSIST_TO/);
    expect(failing.problems.join('\n')).toContain(failing.persistence.hint);
    expect(service.lines.join('\n')).toContain(failing.persistence.hint);
    // Still serving: a server is made and started as ever.
    const created = await service.request('POST', '/servers', { name: 'Busy' });
    expect(created.status).toBe(201);
    expect((await service.request('POST', `/servers/${created.body.id}/start`)).status).toBe(200);
    await fs.writeFile(join(created.body.workspace_path, 'work.txt'), 'kept once the target works\n');
    await expect(service.persistence!.snapshot('busy')).rejects.toMatchObject({ name: 'StoreError', hint: failing.persistence.hint });

    // The operator makes the folder: retried with backoff, it works again.
    await fs.rm(keep);
    await fs.mkdir(keep);
    await eventually(async () => (await health(service)).persistence.state === 'ok', 15_000);
    expect((await health(service)).status).toBe('healthy');
    const snapshot = await service.persistence!.snapshot('busy');
    expect(snapshot.files).toBeGreaterThanOrEqual(1);

    // Failing again in the middle of the service's life: said, and over once it works.
    await fs.rm(keep, { recursive: true });
    await fs.writeFile(keep, 'gone again\n');
    await expect(service.persistence!.snapshot('busy')).rejects.toMatchObject({ name: 'StoreError' });
    expect((await health(service)).persistence).toMatchObject({ state: 'failing', hint: expect.stringContaining('DEVBOX_PERSIST_TO') });
    expect((await service.request('GET', '/servers')).status).toBe(200);
    const record = (await service.request('GET', `/servers/${created.body.id}`)).body;
    expect(record.persistence.last_error).toMatch(/DEVBOX_PERSIST_TO/);
    expect(record.persistence.last_snapshot_id).toBe(snapshot.id);
    await fs.rm(keep);
    await fs.mkdir(keep);
    await service.persistence!.snapshot('busy');
    expect((await health(service)).persistence.state).toBe('ok');
  });
});

describe('deleted servers', () => {
  it('are kept retainDeletedDays: an undelete brings one back with its id and files, then a purge removes it for good', async () => {
    const keep = await scratch();
    // The service's clock, moved on by days when the test says so.
    let daysLater = 0;
    const service = await startTestService({ persistTo: keep, persist: { now: () => Date.now() + daysLater * 86_400_000 } });
    cleanups.push(() => service.stop());
    const created = await service.request('POST', '/servers', { name: 'Oops', settings: { 'editor.tabSize': 3 } });
    const id = created.body.id as string;
    expect((await service.request('POST', `/servers/${id}/start`)).status).toBe(200);
    await fs.mkdir(join(created.body.workspace_path, 'src'));
    await fs.writeFile(join(created.body.workspace_path, 'src', 'app.py'), 'print("not pushed")\n');
    const files = sorted(await hashTree(created.body.workspace_path));

    // A mistaken delete, of a running server: its last changes are snapshotted first.
    expect((await service.request('DELETE', `/servers/${id}`)).status).toBe(200);
    expect((await service.request('GET', `/servers/${id}`)).status).toBe(404);
    const [deleted] = await eventually(async () => {
      const list = await service.persistence!.deleted();
      return list.length === 1 ? list : undefined;
    });
    expect(deleted).toMatchObject({ name: 'oops', uid: id });
    await expect(service.persistence!.undelete('nobody')).rejects.toMatchObject({ status: 404 });

    await service.persistence!.undelete('oops');
    const back = await restoredWhen(service, id, 'Running');
    expect(back.id).toBe(id);
    expect(sorted(await hashTree(created.body.workspace_path))).toEqual(files);
    expect(await service.persistence!.deleted()).toEqual([]);

    // Deleted again, and left: after retainDeletedDays it is gone from the target.
    expect((await service.request('DELETE', `/servers/${id}`)).status).toBe(200);
    await eventually(async () => (await service.persistence!.deleted()).length === 1);
    daysLater = DEFAULT_CONFIG.persistence.retainDeletedDays - 1;
    expect(await service.persistence!.purgeDeleted()).toEqual([]);
    daysLater = DEFAULT_CONFIG.persistence.retainDeletedDays + 1;
    expect(await service.persistence!.purgeDeleted()).toEqual(['oops']);
    expect(await service.persistence!.deleted()).toEqual([]);
    await expect(service.persistence!.undelete('oops')).rejects.toMatchObject({ status: 404 });
    expect(await fs.readdir(join(keep, 'servers')).catch(() => [])).not.toContain('oops');
  });
});

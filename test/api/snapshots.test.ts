// The snapshot routes as a client uses them: take a snapshot, list them, restore a chosen one
// into a stopped server, and undo a delete; without a target, each says how to get one.
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startTestService, type TestService } from '../helpers/service.ts';

let service: TestService;
let keep: string;

beforeAll(async () => {
  keep = await fs.mkdtemp(join(tmpdir(), 'devbox-api-snapshots-'));
  service = await startTestService({ persistTo: keep });
});
afterAll(async () => {
  await service?.stop();
  await fs.rm(keep, { recursive: true, force: true });
});

const sha = async (path: string) => createHash('sha256').update(await fs.readFile(path)).digest('hex');

async function created(name: string): Promise<{ id: string; workspace: string }> {
  const answer = await service.request('POST', '/servers', { name });
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  expect(answer.body.workspace_path, JSON.stringify(answer.body)).toEqual(expect.any(String));
  // Its empty workspace is kept as soon as it is made, before any editor runs.
  await eventually(async () => (await service.request('GET', `/servers/${answer.body.id}`)).body.persistence?.last_snapshot_id ?? undefined);
  return { id: answer.body.id, workspace: answer.body.workspace_path };
}

describe('the snapshot routes', () => {
  it('take a snapshot on request and list it, newest first, in the record too', async () => {
    const { id, workspace } = await created('Kept');
    await fs.writeFile(join(workspace, 'notes.md'), '# notes\n');
    const taken = await service.request('POST', `/servers/${id}/snapshot`);
    expect(taken.status, JSON.stringify(taken.body)).toBe(200);
    expect(taken.body).toMatchObject({ status: 'success', data: { reason: 'api' } });
    expect(taken.body.data.files).toBeGreaterThanOrEqual(1);
    expect(taken.body.message).toContain(taken.body.data.id);
    const listed = await service.request('GET', `/servers/${id}/snapshots`);
    expect(listed.body.data.snapshots[0].id).toBe(taken.body.data.id);
    const record = await eventually(async () => {
      const { body } = await service.request('GET', `/servers/${id}`);
      return body.persistence?.last_snapshot_id === taken.body.data.id ? body : undefined;
    });
    expect(record.persistence.last_error).toBeNull();
  });

  it('restore a chosen snapshot into a stopped server only', async () => {
    const { id, workspace } = await created('Drafts');
    const file = join(workspace, 'draft.txt');
    await fs.writeFile(file, 'the good draft\n');
    const good = (await service.request('POST', `/servers/${id}/snapshot`)).body.data;
    const goodHash = await sha(file);
    await fs.writeFile(file, 'a worse draft\n');
    await service.request('POST', `/servers/${id}/snapshot`);

    expect((await service.request('POST', `/servers/${id}/start`)).status).toBe(200);
    const refused = await service.request('POST', `/servers/${id}/restore`, { snapshot_id: good.id });
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('SERVER_RUNNING');
    expect((await service.request('POST', `/servers/${id}/stop`)).status).toBe(200);

    expect((await service.request('POST', `/servers/${id}/restore`, { snapshot_id: '../../etc' })).status).toBe(400);
    const unknown = await service.request('POST', `/servers/${id}/restore`, { snapshot_id: 'no-such-snapshot' });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('SNAPSHOT_NOT_FOUND');

    const restored = await service.request('POST', `/servers/${id}/restore`, { snapshot_id: good.id });
    expect(restored.status, JSON.stringify(restored.body)).toBe(200);
    expect(restored.body.data.snapshot.id).toBe(good.id);
    expect(restored.body.data.corrupted).toEqual([]);
    expect(await sha(file)).toBe(goodHash);
  });

  it('undo a delete: the server comes back with its id and files', async () => {
    const { id, workspace } = await created('Oops');
    await fs.writeFile(join(workspace, 'work.py'), 'print("precious")\n');
    const before = await sha(join(workspace, 'work.py'));
    expect((await service.request('DELETE', `/servers/${id}`)).status).toBe(200);
    await expect(fs.stat(workspace)).rejects.toThrow();

    const deleted = await eventually(async () => {
      const { body } = await service.request('GET', '/snapshots/deleted');
      return body.data.servers.find((s: { name: string }) => s.name === 'oops');
    });
    expect(deleted.id).toBe(id);
    expect((await service.request('POST', '/snapshots/deleted/no-such-server/restore')).status).toBe(404);
    expect((await service.request('POST', '/snapshots/deleted/..%2Fetc/restore')).status).toBe(400);

    const back = await service.request('POST', '/snapshots/deleted/oops/restore');
    expect(back.status, JSON.stringify(back.body)).toBe(201);
    expect(back.body).toMatchObject({ id, name: 'Oops', status: 'stopped' });
    const file = join(back.body.workspace_path, 'work.py');
    await eventually(async () => (await sha(file).catch(() => undefined)) === before);
    expect((await service.request('GET', '/snapshots/deleted')).body.data.servers.some((s: { name: string }) => s.name === 'oops')).toBe(false);
    // It exists again: a second undo is refused.
    expect((await service.request('POST', '/snapshots/deleted/oops/restore')).status).toBe(409);
  });
});

describe('without a persistence target', () => {
  it("say so, naming the server, when its files cannot be reached in its storage, and keep nothing half-taken", async () => {
    const { id } = await created('Unreachable');
    const before = (await service.request('GET', `/servers/${id}/snapshots`)).body.data.snapshots.length;
    // The storage as a cluster's is when the API server is away: the copy out of the volume fails.
    const storage = service.controller.parts.deps.storage;
    const open = storage.openForSnapshot;
    storage.openForSnapshot = () => Promise.reject(new Error('exec into devbox-unreachable-0: connection refused'));
    try {
      const taken = await service.request('POST', `/servers/${id}/snapshot`);
      expect(taken.status, JSON.stringify(taken.body)).toBe(503);
      expect(taken.body.error.code).toBe('SERVER_FILES_UNAVAILABLE');
      expect(taken.body.error.message).toMatch(/the files of server "unreachable" could not be read from its storage: exec into devbox-unreachable-0: connection refused; nothing at the persistence target changed/);
    } finally {
      storage.openForSnapshot = open;
    }
    expect((await service.request('GET', `/servers/${id}/snapshots`)).body.data.snapshots).toHaveLength(before);
    expect((await service.request('POST', `/servers/${id}/snapshot`)).status).toBe(200);
  });

  it('each route says how to keep snapshots', async () => {
    const plain = await startTestService();
    try {
      const { body } = await plain.request('POST', '/servers', { name: 'Plain' });
      for (const [method, path] of [['GET', `/servers/${body.id}/snapshots`], ['POST', `/servers/${body.id}/snapshot`], ['GET', '/snapshots/deleted']]) {
        const answer = await plain.request(method, path);
        expect(answer.status, path).toBe(409);
        expect(answer.body.error.code, path).toBe('PERSISTENCE_DISABLED');
        expect(answer.body.error.message, path).toContain('DEVBOX_PERSIST_TO');
      }
    } finally {
      await plain.stop();
    }
  });
});

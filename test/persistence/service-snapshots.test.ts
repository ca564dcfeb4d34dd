// When the service takes snapshots: when an editor stops, every persistence.intervalSeconds while
// it runs and something changed (nothing new when nothing did), and on request; and what the
// server's record, the health page and /metrics say of them. Without a target: nothing, and the
// health page says how to keep work.
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/settings.ts';
import { eventually, startTestService, type TestService } from '../helpers/service.ts';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function persisted(intervalSeconds = 300): Promise<{ service: TestService; keep: string }> {
  const keep = await fs.mkdtemp(join(tmpdir(), 'devbox-keep-'));
  const service = await startTestService({ persistTo: keep, config: { persistence: { ...DEFAULT_CONFIG.persistence, intervalSeconds } } });
  cleanups.push(() => fs.rm(keep, { recursive: true, force: true }), () => service.stop());
  return { service, keep };
}

async function runningServer(service: TestService, name: string): Promise<{ id: string; workspace: string }> {
  const created = await service.request('POST', '/servers', { name });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  expect((await service.request('POST', `/servers/${created.body.id}/start`)).status).toBe(200);
  return { id: created.body.id, workspace: created.body.workspace_path };
}

const health = async (service: TestService) => (await service.request('GET', '/health')).body;

describe('snapshots', () => {
  it('takes one when an editor stops, after its process is gone, with what changed', async () => {
    const { service } = await persisted();
    const { id, workspace } = await runningServer(service, 'Stopper');
    // A snapshot while it runs: from then on its folders are watched.
    expect((await service.request('POST', `/servers/${id}/snapshot`)).status).toBe(200);
    expect(service.persistence!.journalState('stopper')).toEqual(expect.arrayContaining([expect.objectContaining({ root: 'workspace', full: 1 })]));
    await fs.writeFile(join(workspace, 'work.txt'), 'before the stop\n');
    expect((await service.request('POST', `/servers/${id}/stop`)).status).toBe(200);
    const list = await eventually(async () => {
      const snapshots = await service.persistence!.list('stopper');
      return snapshots.some((s) => s.reason === 'stop') ? snapshots : undefined;
    });
    expect(list[0]).toMatchObject({ name: 'stopper', uid: id, reason: 'stop', files: list[1].files + 1 });
    // A stopped editor's folders are no longer watched.
    expect(service.persistence!.journalState('stopper')).toEqual([]);
    // The record says so.
    const record = await eventually(async () => {
      const { body } = await service.request('GET', `/servers/${id}`);
      return body.persistence?.last_snapshot_id === list[0].id ? body : undefined;
    });
    expect(record.persistence).toMatchObject({ files: list[0].files, size_bytes: list[0].bytes, last_error: null, in_progress: null });
  });

  it('takes one every intervalSeconds while the editor runs when something changed, and none when nothing did', async () => {
    const { service } = await persisted(1);
    const { workspace } = await runningServer(service, 'Ticker');
    const unchanged = async () => (await health(service)).persistence.counts.unchanged as number;
    // Settled: a tick found nothing new since the last snapshot.
    await eventually(async () => (await unchanged()) >= 1, 15_000);
    const [first] = await service.persistence!.list('ticker');
    expect(first.reason).toBe('interval');
    // Nothing changes: the engine answers "unchanged" at the next ticks, and no snapshot is added.
    const seen = await unchanged();
    await eventually(async () => (await unchanged()) >= seen + 2, 15_000);
    expect((await service.persistence!.list('ticker'))[0].id).toBe(first.id);
    // A change: the next tick keeps it.
    await fs.writeFile(join(workspace, 'changed.txt'), 'new work\n');
    const second = await eventually(async () => {
      const [latest] = await service.persistence!.list('ticker');
      return latest.id !== first.id ? latest : undefined;
    }, 15_000);
    expect(second).toMatchObject({ reason: 'interval', files: first.files + 1 });
    // While the editor runs its folders are watched, and later snapshots look only at what changed.
    const workspaceJournal = service.persistence!.journalState('ticker').find((journal) => journal.root === 'workspace')!;
    expect(workspaceJournal).toMatchObject({ root: 'workspace', full: 1 });
    expect(workspaceJournal.watching).toBeGreaterThanOrEqual(1);
    expect(workspaceJournal.patched).toBeGreaterThanOrEqual(1);
  });

  it('takes one on request, and counts it in /metrics', async () => {
    const { service } = await persisted();
    const { id, workspace } = await runningServer(service, 'Asked');
    await fs.writeFile(join(workspace, 'a.txt'), 'x'.repeat(10_000));
    const snapshot = await service.persistence!.snapshot('asked');
    expect(snapshot).toMatchObject({ name: 'asked', uid: id, reason: 'api' });
    expect(snapshot.uploadedBytes).toBeGreaterThanOrEqual(10_000);
    const metrics = await (await fetch(`${service.url}/metrics`)).text();
    expect(metrics).toMatch(/^devbox_snapshot_duration_seconds_count [1-9]/m);
    expect(Number(/^devbox_snapshot_bytes_total (\d+)/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(10_000);
    expect(metrics).toMatch(/^devbox_snapshot_failures_total 0$/m);
    expect(metrics).toMatch(/^devbox_restore_duration_seconds_count 0$/m);
    expect(metrics).toMatch(/^devbox_restore_failures_total 0$/m);
    const { persistence } = await health(service);
    expect(persistence).toMatchObject({ state: 'ok', last_error: null, hint: null });
    expect(persistence.target).toMatch(/^folder \//);
  });

  it('refuses a chosen snapshot into a running server, and puts one back into a stopped one', async () => {
    const { service } = await persisted();
    const { id, workspace } = await runningServer(service, 'Chosen');
    await fs.writeFile(join(workspace, 'draft.txt'), 'first draft\n');
    const kept = await service.persistence!.snapshot('chosen');
    await expect(service.persistence!.restoreInto('chosen', kept.id)).rejects.toMatchObject({ status: 409, code: 'SERVER_NOT_STOPPED' });
    await fs.writeFile(join(workspace, 'draft.txt'), 'a worse draft\n');
    await fs.writeFile(join(workspace, 'stray.txt'), 'made later\n');
    expect((await service.request('POST', `/servers/${id}/stop`)).status).toBe(200);
    const result = await service.persistence!.restoreInto('chosen', kept.id);
    expect(result.snapshot.id).toBe(kept.id);
    expect(await fs.readFile(join(workspace, 'draft.txt'), 'utf8')).toBe('first draft\n');
    const record = await eventually(async () => {
      const { body } = await service.request('GET', `/servers/${id}`);
      return body.phase === 'Stopped' && body.conditions.some((c: any) => c.type === 'Restored' && c.status === 'True') ? body : undefined;
    });
    expect(record.conditions.find((c: any) => c.type === 'Restored').message).toContain(kept.id);
    await expect(service.persistence!.restoreInto('chosen', 'no-such-snapshot')).rejects.toMatchObject({ status: 404 });
  });
});

describe('without a target', () => {
  it('keeps nothing, and the health page says how to keep work', async () => {
    const service = await startTestService();
    cleanups.push(() => service.stop());
    expect(service.persistence).toBeUndefined();
    const { body } = await service.request('GET', '/health');
    expect(body.status).toBe('healthy');
    expect(body.persistence).toEqual({
      target: null, state: 'disabled',
      message: 'not persisted: set DEVBOX_PERSIST_TO to a folder or dbfs:/Volumes/… to keep work across restarts',
    });
    const created = await service.request('POST', '/servers', { name: 'Plain' });
    expect((await service.request('GET', `/servers/${created.body.id}`)).body.persistence).toBeNull();
  });
});

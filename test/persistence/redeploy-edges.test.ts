// What the model-based run of the fleet found (test/persistence/fleet-model.test.ts), each kept
// here as a test of its own: a workspace populated after its empty folder was kept, and deletes
// the target had not heard of yet when the SIGTERM came.
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { postForm } from '../helpers/form.ts';
import { eventually, type TestService } from '../helpers/service.ts';
import { buildZip } from '../workspace/zip-fixtures.ts';
import { fleetOf, makeTarget, scratch, sigterm, startOn, wipe, type Target, type TargetKind } from './redeploy-fixtures.ts';
import { restoredWhen } from './service-fixtures.ts';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

async function machine(kind: TargetKind): Promise<{ target: Target; open: () => Promise<TestService> }> {
  const base = await scratch(`devbox-edges-${kind}-`);
  cleanups.push(() => fs.rm(base, { recursive: true, force: true }));
  const target = await makeTarget(kind, base);
  cleanups.push(() => target.close());
  const open = () => startOn(target, join(base, 'machine'), cleanups);
  return { target, open };
}

describe.each<TargetKind>(['folder', 'volume'])('a redeploy, with a %s as the target', (kind) => {
  it('brings back a workspace populated from a ZIP after its empty folder was kept, though its editor never ran', async () => {
    const { open } = await machine(kind);
    const first = await open();
    const created = await first.request('POST', '/servers', { name: 'Filled later' });
    expect(created.status).toBe(201);
    const id = created.body.id;
    // The empty workspace is kept when it is made.
    await eventually(async () => (await first.request('GET', `/servers/${id}`)).body.persistence?.last_snapshot_id ?? undefined);
    const zip = buildZip([{ name: 'lesson.md', data: '# Lesson 1\n' }, { name: 'data/points.csv', data: 'x,y\n1,2\n' }]);
    const filled = await postForm(`${first.url}/servers/${id}/clone-workspace`, {}, zip);
    expect(filled.status, JSON.stringify(filled.body)).toBe(200);
    const before = await fleetOf(first);
    expect(before['filled-later'].workspace.map(([path]) => path)).toEqual(['data/points.csv', 'lesson.md']);

    await sigterm(first);
    await wipe(first);
    const second = await open();
    await restoredWhen(second, id, 'Stopped', 60_000);
    expect(await fleetOf(second)).toEqual(before);
  }, 120_000);

  it('does not bring back servers deleted a moment before the SIGTERM', async () => {
    const { target, open } = await machine(kind);
    const first = await open();
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const answer = await first.request('POST', '/servers', { name: `Short lived ${i}` });
      expect(answer.status).toBe(201);
      ids.push(answer.body.id);
    }
    const kept = await first.request('POST', '/servers', { name: 'Stays' });
    await eventually(async () => (await first.request('GET', '/health')).body.persistence?.declared_behind === 0 || undefined, 10_000);
    // A slow target: the deletion marks are still on their way when the SIGTERM comes.
    target.workspace?.filesFaults({ delayMs: 150 });
    const deletes = await Promise.all(ids.map((id) => first.request('DELETE', `/servers/${id}`)));
    expect(deletes.map((d) => d.status)).toEqual(ids.map(() => 200));
    await sigterm(first);
    target.workspace?.filesFaults({});
    await wipe(first);

    const second = await open();
    await restoredWhen(second, kept.body.id, 'Stopped', 60_000);
    expect(Object.keys(await fleetOf(second))).toEqual(['stays']);
    // Each delete is kept, and can be undone.
    const deleted = (await second.request('GET', '/snapshots/deleted')).body.data.servers.map((s: { id: string }) => s.id).sort();
    expect(deleted).toEqual([...ids].sort());
  }, 120_000);
});

import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { content, describeTree, engineBench, sourcesFor, useTempDirs, workspaceRoot, writeFiles } from './fixtures.ts';

const HOUR = 3600_000;
const DAY = 24 * HOUR;

/** Keys of the objects in a folder store. */
async function objectKeys(storeDir: string): Promise<string[]> {
  return (await fs.readdir(join(storeDir, 'objects')).catch(() => [])).map((name) => `objects/${name}`).sort();
}

describe('servers in the store: deletion marks, purge, garbage collection', () => {
  const tempDir = useTempDirs();

  it('lists every server with its latest snapshot, and when it was marked deleted', async () => {
    let now = Date.parse('2026-11-26T10:00:00Z');
    const bench = await engineBench(tempDir, { now: () => now });
    const workspace = await tempDir();
    await writeFiles(workspace, { 'a.txt': 'a' });
    await bench.engine.snapshot(sourcesFor('alpha', workspace), 'stop');
    now += 60_000;
    const latest = await bench.engine.snapshot(sourcesFor('alpha', workspace, { status: { phase: 'Running' } }), 'interval');
    await bench.engine.snapshot(sourcesFor('beta', workspace), 'stop');
    await bench.engine.markDeleted('beta', new Date(now));

    const servers = await (await bench.freshEngine()).servers();
    expect(servers.map(({ name, uid, latest, deletedAt }) => ({ name, uid, id: latest?.id, deletedAt }))).toEqual([
      { name: 'alpha', uid: 'uid-alpha', id: latest.snapshot.id, deletedAt: undefined },
      { name: 'beta', uid: 'uid-beta', id: expect.any(String), deletedAt: '2026-11-26T10:01:00.000Z' },
    ]);
    expect(latest.snapshot.createdAt).toBe('2026-11-26T10:01:00.000Z');
    await bench.engine.unmarkDeleted('beta');
    expect((await bench.engine.servers()).find((server) => server.name === 'beta')?.deletedAt).toBeUndefined();
  });

  it('purges a server marked deleted more than retainDays ago, and neither one within them nor one unmarked', async () => {
    let now = Date.parse('2026-11-26T10:00:00Z');
    const bench = await engineBench(tempDir, { now: () => now });
    const workspace = await tempDir();
    await writeFiles(workspace, { 'a.txt': 'a' });
    for (const name of ['gone', 'undone', 'kept']) await bench.engine.snapshot(sourcesFor(name, workspace), 'stop');
    await bench.engine.markDeleted('gone', new Date(now));
    await bench.engine.markDeleted('undone', new Date(now));
    await bench.engine.unmarkDeleted('undone');

    now += 6 * DAY;
    expect(await bench.engine.purgeDeleted(7)).toEqual([]);
    now += 2 * DAY;
    expect(await bench.engine.purgeDeleted(7)).toEqual(['gone']);
    expect(await bench.engine.list('gone')).toEqual([]);
    expect((await bench.engine.servers()).map((server) => server.name)).toEqual(['kept', 'undone']);
    expect(await fs.readdir(join(bench.storeDir, 'servers'))).not.toContain('gone');
  });

  it('purges only the snapshots taken before the mark when the name was used again', async () => {
    let now = Date.parse('2026-11-26T10:00:00Z');
    const bench = await engineBench(tempDir, { now: () => now });
    const workspace = await tempDir();
    await writeFiles(workspace, { 'a.txt': 'a' });
    await bench.engine.snapshot(sourcesFor('hello', workspace), 'stop');
    await bench.engine.markDeleted('hello', new Date(now));
    now += HOUR;
    const again = await bench.engine.snapshot(sourcesFor('hello', workspace, { uid: 'uid-second' }), 'stop');
    now += 8 * DAY;
    expect(await bench.engine.purgeDeleted(7)).toEqual(['hello']);
    expect((await bench.engine.list('hello')).map((info) => info.id)).toEqual([again.snapshot.id]);
  });

  it('collects objects no snapshot refers to once older than an hour, and keeps referenced and young ones', async () => {
    let now = Date.parse('2026-11-26T10:00:00Z');
    const bench = await engineBench(tempDir, { now: () => now, keepSnapshots: 1 });
    const workspace = await tempDir();
    await writeFiles(workspace, { 'a.txt': content('a1', 5000), 'b.txt': content('b', 5000) });
    await bench.engine.snapshot(sourcesFor('hello', workspace), 'stop');
    const firstObjects = await objectKeys(bench.storeDir);
    await fs.writeFile(join(bench.storeDir, 'objects', 'not-ours.txt'), 'a file the engine did not write');

    now += 10 * 60_000;
    await writeFiles(workspace, { 'a.txt': content('a2', 5000) });
    await bench.engine.snapshot(sourcesFor('hello', workspace), 'stop'); // the first snapshot goes (keep 1)
    const secondObjects = (await objectKeys(bench.storeDir)).filter((key) => !firstObjects.includes(key) && key !== 'objects/not-ours.txt');
    expect(secondObjects).toHaveLength(1);

    // Half an hour on, and two hours on: the first pack holds b.txt, which the second snapshot reuses.
    now += 20 * 60_000;
    expect(await bench.engine.collectGarbage()).toEqual({ removed: 0, bytes: 0 });
    now += 2 * HOUR;
    expect(await bench.engine.collectGarbage()).toEqual({ removed: 0, bytes: 0 });
    const target = join(await tempDir(), 'restored');
    await (await bench.freshEngine()).restore('hello', { roots: workspaceRoot(target) });
    expect(await describeTree(target)).toEqual(await describeTree(workspace));

    // Once b.txt changes too, the first pack is referenced by nothing: it goes once old, the others stay.
    await writeFiles(workspace, { 'b.txt': content('b2', 5000) });
    await bench.engine.snapshot(sourcesFor('hello', workspace), 'stop');
    expect(await bench.engine.collectGarbage()).toEqual({ removed: 1, bytes: 10_000 });
    const left = await objectKeys(bench.storeDir);
    expect(left).not.toContain(firstObjects[0]);
    expect(left).toEqual(expect.arrayContaining([...secondObjects, 'objects/not-ours.txt']));
    const final = join(await tempDir(), 'final');
    await (await bench.freshEngine()).restore('hello', { roots: workspaceRoot(final) });
    expect(await describeTree(final)).toEqual(await describeTree(workspace));
  });
});

import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { SnapshotIndex } from '../../src/persistence/index-file.ts';
import { SnapshotNotFoundError } from '../../src/persistence/types.ts';
import { content, describeTree, engineBench, sourcesFor, useTempDirs, workspaceRoot, writeFiles } from './fixtures.ts';

async function readIndex(storeDir: string, name: string, id: string): Promise<SnapshotIndex> {
  return JSON.parse(await fs.readFile(join(storeDir, 'servers', name, 'snapshots', `${id}.json`), 'utf8'));
}

/** Flips a byte of the stored object holding `path`, inside that file's bytes. */
async function damage(storeDir: string, index: SnapshotIndex, path: string): Promise<void> {
  const record = index.roots[0].entries.find((entry) => entry.path === path);
  if (record?.type !== 'file') throw new Error(`no file ${path}`);
  const [object, offset, length] = record.parts.at(-1)!;
  const file = join(storeDir, index.objects[object]!);
  const bytes = await fs.readFile(file);
  bytes[offset + Math.floor(length / 2)] ^= 0xff;
  await fs.writeFile(file, bytes);
}

describe('restore', () => {
  const tempDir = useTempDirs();

  it('detects a damaged stored object by its hash: that file is reported and not written, every other restored', async () => {
    const bench = await engineBench(tempDir, { smallFileBytes: 64 * 1024, chunkBytes: 128 * 1024 });
    const workspace = await tempDir();
    const files: Record<string, Buffer> = {};
    for (let i = 0; i < 40; i++) files[`f${i}.txt`] = content(`f${i}`, 3000);
    files['big.bin'] = content('big', 300_000); // three objects of its own
    await writeFiles(workspace, files);
    const { snapshot } = await bench.engine.snapshot(sourcesFor('hello', workspace), 'api');
    const index = await readIndex(bench.storeDir, 'hello', snapshot.id);
    await damage(bench.storeDir, index, 'f17.txt');
    await damage(bench.storeDir, index, 'big.bin');

    const target = join(await tempDir(), 'restored');
    const result = await (await bench.freshEngine()).restore('hello', { roots: workspaceRoot(target) });
    expect(result.corrupted.sort()).toEqual(['workspace/big.bin', 'workspace/f17.txt']);
    expect(result.files).toBe(39);
    const restored = await describeTree(target);
    const expected = await describeTree(workspace);
    expected.delete(Buffer.from('f17.txt').toString('hex'));
    expected.delete(Buffer.from('big.bin').toString('hex'));
    expect(restored).toEqual(expected);
  });

  it('reports every file of a missing object as corrupted, and restores the rest', async () => {
    const bench = await engineBench(tempDir, { smallFileBytes: 1000 });
    const workspace = await tempDir();
    await writeFiles(workspace, { 'small.txt': 'small', 'large.bin': content('large', 5000) });
    const { snapshot } = await bench.engine.snapshot(sourcesFor('hello', workspace), 'api');
    const index = await readIndex(bench.storeDir, 'hello', snapshot.id);
    const large = index.roots[0].entries.find((entry) => entry.path === 'large.bin');
    await fs.rm(join(bench.storeDir, index.objects[(large as { parts: number[][] }).parts[0][0]]!));

    const target = join(await tempDir(), 'restored');
    const result = await (await bench.freshEngine()).restore('hello', { roots: workspaceRoot(target) });
    expect(result.corrupted).toEqual(['workspace/large.bin']);
    expect(await fs.readFile(join(target, 'small.txt'), 'utf8')).toBe('small');
  });

  it('keeps a local file newer than the snapshot, writes back missing ones and replaces older ones', async () => {
    const bench = await engineBench(tempDir);
    const workspace = await tempDir();
    await writeFiles(workspace, { 'edited.txt': 'snapshot', 'deleted.txt': 'snapshot', 'older.txt': 'snapshot', 'same.txt': 'same' });
    const anHourAgo = new Date(Date.now() - 3600_000);
    for (const name of ['edited.txt', 'deleted.txt', 'older.txt', 'same.txt']) await fs.utimes(join(workspace, name), anHourAgo, anHourAgo);
    await bench.engine.snapshot(sourcesFor('hello', workspace), 'stop');

    await fs.writeFile(join(workspace, 'edited.txt'), 'edited after the snapshot');
    await fs.rm(join(workspace, 'deleted.txt'));
    await fs.writeFile(join(workspace, 'older.txt'), 'an older local copy');
    const twoHoursAgo = new Date(Date.now() - 7200_000);
    await fs.utimes(join(workspace, 'older.txt'), twoHoursAgo, twoHoursAgo);
    await writeFiles(workspace, { 'local-only.txt': 'never in a snapshot' });

    const result = await bench.engine.restore('hello', { roots: workspaceRoot(workspace) });
    expect(result.keptNewer).toEqual(['workspace/edited.txt']);
    expect(result.files).toBe(3);
    expect(await fs.readFile(join(workspace, 'edited.txt'), 'utf8')).toBe('edited after the snapshot');
    expect(await fs.readFile(join(workspace, 'deleted.txt'), 'utf8')).toBe('snapshot');
    expect(await fs.readFile(join(workspace, 'older.txt'), 'utf8')).toBe('snapshot');
    expect(await fs.readFile(join(workspace, 'local-only.txt'), 'utf8')).toBe('never in a snapshot');
    // No temporary file is left beside them.
    expect((await fs.readdir(workspace)).sort()).toEqual(['deleted.txt', 'edited.txt', 'local-only.txt', 'older.txt', 'same.txt']);
  });

  it('restores a chosen older snapshot, replacing newer local files when asked to', async () => {
    const bench = await engineBench(tempDir);
    const workspace = await tempDir();
    await writeFiles(workspace, { 'a.txt': 'one' });
    const anHourAgo = new Date(Date.now() - 3600_000);
    await fs.utimes(join(workspace, 'a.txt'), anHourAgo, anHourAgo);
    const first = await bench.engine.snapshot(sourcesFor('hello', workspace), 'api');
    await writeFiles(workspace, { 'a.txt': 'two, later' });
    await bench.engine.snapshot(sourcesFor('hello', workspace), 'api');

    const kept = await bench.engine.restore('hello', { snapshotId: first.snapshot.id, roots: workspaceRoot(workspace) });
    expect(kept.keptNewer).toEqual(['workspace/a.txt']);
    const replaced = await bench.engine.restore('hello', { snapshotId: first.snapshot.id, roots: workspaceRoot(workspace), overwriteNewer: true });
    expect(replaced.snapshot.id).toBe(first.snapshot.id);
    expect(await fs.readFile(join(workspace, 'a.txt'), 'utf8')).toBe('one');
  });

  it('falls back to the newest readable snapshot when the latest index is damaged', async () => {
    const bench = await engineBench(tempDir);
    const workspace = await tempDir();
    await writeFiles(workspace, { 'a.txt': 'one' });
    const first = await bench.engine.snapshot(sourcesFor('hello', workspace), 'api');
    await writeFiles(workspace, { 'a.txt': 'two' });
    const second = await bench.engine.snapshot(sourcesFor('hello', workspace), 'api');
    await fs.writeFile(join(bench.storeDir, 'servers/hello/snapshots', `${second.snapshot.id}.json`), '{"format": "devbox-snap');

    const target = join(await tempDir(), 'restored');
    const result = await (await bench.freshEngine()).restore('hello', { roots: workspaceRoot(target) });
    expect(result.snapshot.id).toBe(first.snapshot.id);
    expect(await fs.readFile(join(target, 'a.txt'), 'utf8')).toBe('one');
  });

  it('refuses a server or snapshot the store does not hold', async () => {
    const bench = await engineBench(tempDir);
    const workspace = await tempDir();
    await expect(bench.engine.restore('nobody', { roots: workspaceRoot(workspace) })).rejects.toBeInstanceOf(SnapshotNotFoundError);
    await writeFiles(workspace, { 'a.txt': 'one' });
    await bench.engine.snapshot(sourcesFor('hello', workspace), 'api');
    await expect(bench.engine.restore('hello', { snapshotId: '2020-01-01T00-00-00.000Z-00000000', roots: [] })).rejects.toThrow(/has no snapshot 2020-01-01/);
  });

  it('lets the next snapshot after a restore skip reading the restored files', async () => {
    let reads = 0;
    const bench = await engineBench(tempDir, { afterRead: () => void reads++ });
    const workspace = await tempDir();
    const files: Record<string, Buffer> = {};
    for (let i = 0; i < 50; i++) files[`f${i}.txt`] = content(`f${i}`, 100);
    await writeFiles(workspace, files);
    const anHourAgo = new Date(Date.now() - 3600_000);
    for (const name of Object.keys(files)) await fs.utimes(join(workspace, name), anHourAgo, anHourAgo);
    const first = await bench.engine.snapshot(sourcesFor('hello', workspace), 'api');

    const target = join(await tempDir(), 'restored');
    const engine = await bench.freshEngine();
    await engine.restore('hello', { roots: workspaceRoot(target) });
    reads = 0;
    expect(await engine.snapshot(sourcesFor('hello', target), 'api')).toEqual({ snapshot: first.snapshot, unchanged: true });
    expect(reads).toBe(0);
  });
});

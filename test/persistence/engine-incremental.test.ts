import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { StoreError } from '../../src/persistence/types.ts';
import { eventually } from '../helpers/wait.ts';
import { content, describeTree, engineBench, sourcesFor, useTempDirs, workspaceRoot, writeFiles } from './fixtures.ts';

/** 500 files of 2 kB, last changed an hour ago (as most of a workspace is). */
async function fiveHundredFiles(workspace: string): Promise<string[]> {
  const paths = Array.from({ length: 500 }, (_, i) => `pkg${i % 10}/file-${i}.txt`);
  await writeFiles(workspace, Object.fromEntries(paths.map((path, i) => [path, content(`v1 ${i}`, 2048)])));
  const anHourAgo = new Date(Date.now() - 3600_000);
  await Promise.all(paths.map((path) => fs.utimes(join(workspace, path), anHourAgo, anHourAgo)));
  return paths;
}

describe('incremental snapshots', () => {
  const tempDir = useTempDirs();

  it('after 10 of 500 files change, reads and uploads only those 10', async () => {
    let reads = 0;
    const bench = await engineBench(tempDir, { afterRead: () => void reads++ });
    const workspace = await tempDir();
    const paths = await fiveHundredFiles(workspace);
    await bench.engine.snapshot(sourcesFor('hello', workspace), 'stop');
    expect(reads).toBe(500);

    for (const path of paths.slice(0, 10)) await fs.writeFile(join(workspace, path), content(`v2 ${path}`, 3000));
    bench.store.reset();
    reads = 0;
    const { snapshot, unchanged } = await bench.engine.snapshot(sourcesFor('hello', workspace), 'interval');

    expect(unchanged).toBe(false);
    expect(reads).toBe(10);
    const objects = bench.store.puts.filter((key) => key.startsWith('objects/'));
    expect(objects).toHaveLength(1); // one pack
    expect(snapshot.uploadedBytes).toBe(10 * 3000);
    // The pack is made durable (its folder flushed) before the index that refers to it is put.
    expect(bench.store.sequence).toEqual([`batched put ${objects[0]}`, 'flush', `put servers/hello/snapshots/${snapshot.id}.json`]);
    // The last index came from the local cache: no request read it.
    expect(bench.store.gets).toEqual([]);
    const target = join(await tempDir(), 'restored');
    await (await bench.freshEngine()).restore('hello', { roots: workspaceRoot(target) });
    expect(await describeTree(target)).toEqual(await describeTree(workspace));
  });

  it('keeps the last index in memory: a snapshot soon after another reads neither the cache file nor the store', async () => {
    let reads = 0;
    const bench = await engineBench(tempDir, { afterRead: () => void reads++ });
    const workspace = await tempDir();
    const paths = await fiveHundredFiles(workspace);
    await bench.engine.snapshot(sourcesFor('hello', workspace), 'stop');
    await fs.rm(bench.cacheDir, { recursive: true });
    await fs.writeFile(join(workspace, paths[0]), 'changed');
    bench.store.reset();
    reads = 0;
    const { snapshot } = await bench.engine.snapshot(sourcesFor('hello', workspace), 'shutdown');
    expect(reads).toBe(1);
    expect(bench.store.gets).toEqual([]);
    expect(snapshot.uploadedBytes).toBe('changed'.length);
  });

  it('empties the slot of an object no file refers to any more, keeping the others\' numbers', async () => {
    const bench = await engineBench(tempDir, { smallFileBytes: 1000 });
    const workspace = await tempDir();
    await writeFiles(workspace, { 'a.bin': content('a', 2000), 'b.bin': content('b', 2000), 'c.txt': 'small' });
    await bench.engine.snapshot(sourcesFor('hello', workspace), 'stop');
    await writeFiles(workspace, { 'a.bin': content('a2', 2000) });
    const { snapshot } = await bench.engine.snapshot(sourcesFor('hello', workspace), 'stop');
    const index = JSON.parse(await fs.readFile(join(bench.storeDir, 'servers/hello/snapshots', `${snapshot.id}.json`), 'utf8'));
    const objectOf = (path: string) => index.roots[0].entries.find((entry: { path: string }) => entry.path === path).parts[0][0];
    expect(index.objects.filter((key: string | null) => key === null)).toHaveLength(1);
    expect(index.objects[objectOf('a.bin')]).toMatch(/^objects\//);
    expect(index.objects[objectOf('b.bin')]).toMatch(/^objects\//);
    const target = join(await tempDir(), 'restored');
    await (await bench.freshEngine()).restore('hello', { roots: workspaceRoot(target) });
    expect(await describeTree(target)).toEqual(await describeTree(workspace));
  });

  it('writes nothing and answers unchanged when nothing differs', async () => {
    const bench = await engineBench(tempDir);
    const workspace = await tempDir();
    await fiveHundredFiles(workspace);
    const first = await bench.engine.snapshot(sourcesFor('hello', workspace), 'stop');
    bench.store.reset();

    const again = await bench.engine.snapshot(sourcesFor('hello', workspace), 'interval');
    expect(again).toEqual({ snapshot: first.snapshot, unchanged: true });
    expect(bench.store.puts).toEqual([]);
    // Without the local cache too: it reads the files again, finds the same content, and writes nothing.
    const fresh = await bench.freshEngine();
    expect(await fresh.snapshot(sourcesFor('hello', workspace), 'interval')).toEqual({ snapshot: first.snapshot, unchanged: true });
    expect(bench.store.puts).toEqual([]);
    expect(await bench.engine.list('hello')).toHaveLength(1);
  });

  it('takes a new snapshot, uploading no file, when only the status, manifest or extensions change', async () => {
    const bench = await engineBench(tempDir);
    const workspace = await tempDir();
    await writeFiles(workspace, { 'a.txt': 'a' });
    await bench.engine.snapshot(sourcesFor('hello', workspace), 'stop');
    for (const change of [{ status: { phase: 'Running' } }, { manifestText: 'changed: true\n' }, { extensions: [] }]) {
      bench.store.reset();
      const { unchanged, snapshot } = await bench.engine.snapshot(sourcesFor('hello', workspace, change), 'api');
      expect(unchanged).toBe(false);
      expect(snapshot.uploadedBytes).toBe(0);
      expect(bench.store.puts).toEqual([`servers/hello/snapshots/${snapshot.id}.json`]);
    }
  });

  it('runs one snapshot per server at a time: a second call waits for the first, then finds nothing new', async () => {
    const bench = await engineBench(tempDir);
    const workspace = await tempDir();
    await writeFiles(workspace, { 'a.txt': 'a' });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const attempted: string[] = [];
    bench.store.beforePut = (key) => {
      attempted.push(key);
      return held;
    };

    const first = bench.engine.snapshot(sourcesFor('hello', workspace), 'stop');
    let secondDone = false;
    const second = bench.engine.snapshot(sourcesFor('hello', workspace), 'api').finally(() => (secondDone = true));
    // The first snapshot's object, and its index (prepared while the object is stored), are held.
    await eventually(() => attempted.length === 2);
    expect(attempted[0]).toMatch(/^objects\//);
    expect(attempted[1]).toMatch(/^servers\/hello\/snapshots\//);
    expect(secondDone).toBe(false);
    release();
    const [a, b] = await Promise.all([first, second]);
    expect(a.unchanged).toBe(false);
    expect(b).toEqual({ snapshot: a.snapshot, unchanged: true });
  });

  it('tries a put again after a transient failure', async () => {
    const bench = await engineBench(tempDir, { retryDelaysMs: [0, 0] });
    const workspace = await tempDir();
    await writeFiles(workspace, { 'a.txt': 'a' });
    let failures = 0;
    bench.store.beforePut = (key) => {
      if (key.startsWith('objects/') && failures++ === 0) throw new StoreError('transient', 'HTTP 503', 'try later');
    };
    const { snapshot } = await bench.engine.snapshot(sourcesFor('hello', workspace), 'api');
    expect(failures).toBe(2);
    expect((await bench.engine.list('hello')).map((info) => info.id)).toEqual([snapshot.id]);
  });

  it('commits no index when an object cannot be stored, and does not try the index again for it', async () => {
    const bench = await engineBench(tempDir, { retryDelaysMs: [0, 0] });
    const workspace = await tempDir();
    await writeFiles(workspace, { 'a.txt': 'a' });
    const first = await bench.engine.snapshot(sourcesFor('hello', workspace), 'api');
    await writeFiles(workspace, { 'b.txt': 'b' });
    const tried: string[] = [];
    bench.store.beforePut = (key) => {
      tried.push(key.split('/')[0]);
      if (key.startsWith('objects/')) throw new StoreError('transient', 'HTTP 503', 'try later');
    };
    await expect(bench.engine.snapshot(sourcesFor('hello', workspace), 'api')).rejects.toThrow('HTTP 503');
    // The object was tried three times; the index, prepared meanwhile, once, and never committed.
    expect(tried.filter((kind) => kind === 'objects')).toHaveLength(3);
    expect(tried.filter((kind) => kind === 'servers')).toHaveLength(1);
    expect(await fs.readdir(join(bench.storeDir, 'servers/hello/snapshots'))).toEqual([`${first.snapshot.id}.json`]);
    expect((await bench.engine.list('hello')).map((info) => info.id)).toEqual([first.snapshot.id]);
  });

  it('keeps the newest keepSnapshots snapshots, listed newest first', async () => {
    const bench = await engineBench(tempDir, { keepSnapshots: 3 });
    const workspace = await tempDir();
    await writeFiles(workspace, { 'a.txt': 'a' });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await bench.engine.snapshot(sourcesFor('hello', workspace, { status: { n: i } }), 'api')).snapshot.id);
    expect([...ids].sort()).toEqual(ids);
    expect((await bench.engine.list('hello')).map((info) => info.id)).toEqual(ids.slice(2).reverse());
  });
});

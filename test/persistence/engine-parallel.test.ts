import { blake3 } from '@napi-rs/blake-hash';
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { SnapshotIndex } from '../../src/persistence/index-file.ts';
import { WorkPool } from '../../src/persistence/work-pool.ts';
import { eventually } from '../helpers/wait.ts';
import { content, describeTree, engineBench, sourcesFor, useTempDirs, workspaceRoot, writeFiles } from './fixtures.ts';

async function readIndex(storeDir: string, name: string, id: string): Promise<SnapshotIndex & Record<string, unknown>> {
  return JSON.parse(await fs.readFile(join(storeDir, 'servers', name, 'snapshots', `${id}.json`), 'utf8'));
}

/** Files of every kind the batches meet: many small ones, duplicates, empty ones, one larger than a small file, one larger than an object. */
async function mixedWorkspace(workspace: string): Promise<void> {
  const files: Record<string, Buffer | string> = {};
  for (let i = 0; i < 400; i++) files[`src/d${i % 9}/f${i}.txt`] = content(`small ${i}`, (i * 131) % 9000);
  for (let i = 0; i < 5; i++) files[`copies/same-${i}.bin`] = content('the same bytes', 20_000);
  files['empty.txt'] = '';
  files['medium.bin'] = content('medium', 150_000);
  files['large.bin'] = content('large', 600_000);
  await writeFiles(workspace, files);
  const root = Buffer.from(workspace);
  await fs.writeFile(Buffer.concat([root, Buffer.from('/'), Buffer.from([0x6e, 0xff, 0x0a])]), 'a name that is not UTF-8');
  await fs.chmod(join(workspace, 'medium.bin'), 0o750);
}

describe('snapshots and restores in worker threads', () => {
  const tempDir = useTempDirs();
  const pool = new WorkPool(2, 5_000, { startBytes: 0 });
  afterAll(() => pool.close());
  // Every read and write goes through the workers, however small.
  const options = { pool, parallelMinBytes: 0, smallFileBytes: 64 * 1024, packBytes: 256 * 1024, chunkBytes: 256 * 1024 };

  it('gives back every file byte-identical, storing each content once', async () => {
    const logged: string[] = [];
    const bench = await engineBench(tempDir, { ...options, log: (message) => logged.push(message) });
    const workspace = await tempDir();
    await mixedWorkspace(workspace);
    const before = await describeTree(workspace);

    const { snapshot } = await bench.engine.snapshot(sourcesFor('hello', workspace), 'api');
    expect(snapshot).toMatchObject({ files: 409, skipped: [] });
    // The five copies are uploaded once.
    expect(snapshot.uploadedBytes).toBe(snapshot.bytes - 4 * 20_000);

    const target = join(await tempDir(), 'restored');
    const result = await (await bench.freshEngine()).restore('hello', { roots: workspaceRoot(target) });
    expect(result).toMatchObject({ files: 409, bytes: snapshot.bytes, corrupted: [], keptNewer: [] });
    expect(await describeTree(target)).toEqual(before);
    expect(logged).toEqual([]); // the workers did it all
  });

  it('names its hash in the index: BLAKE3, as b3sum prints it', async () => {
    const bench = await engineBench(tempDir, options);
    const workspace = await tempDir();
    await writeFiles(workspace, { 'a.txt': 'hello\n', 'big.bin': content('big', 300_000) });
    const { snapshot } = await bench.engine.snapshot(sourcesFor('hello', workspace), 'api');
    const index = await readIndex(bench.storeDir, 'hello', snapshot.id);
    expect(index).toMatchObject({ format: 'devbox-snapshot/2', hash: 'blake3' });
    // BLAKE3's published test vector, so a binding that hashed otherwise would fail here.
    expect(blake3(Buffer.from('abc')).toString('hex')).toBe('6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85');
    for (const path of ['a.txt', 'big.bin']) {
      const record = index.roots[0].entries.find((entry) => entry.path === path);
      const expected = blake3(await fs.readFile(join(workspace, path))).toString('hex');
      expect(record).toMatchObject({ type: 'file', hash: expected });
    }
  });

  it('detects a damaged object in the workers: that file is reported, every other restored', async () => {
    const bench = await engineBench(tempDir, options);
    const workspace = await tempDir();
    const files: Record<string, Buffer> = {};
    for (let i = 0; i < 60; i++) files[`f${i}.txt`] = content(`f${i}`, 5000);
    await writeFiles(workspace, files);
    const { snapshot } = await bench.engine.snapshot(sourcesFor('hello', workspace), 'api');
    const index = await readIndex(bench.storeDir, 'hello', snapshot.id);
    const record = index.roots[0].entries.find((entry) => entry.path === 'f33.txt');
    if (record?.type !== 'file') throw new Error('no f33.txt');
    const [object, offset] = record.parts[0];
    const file = join(bench.storeDir, index.objects[object]!);
    const bytes = await fs.readFile(file);
    bytes[offset + 10] ^= 0xff;
    await fs.writeFile(file, bytes);

    const target = join(await tempDir(), 'restored');
    const result = await (await bench.freshEngine()).restore('hello', { roots: workspaceRoot(target) });
    expect(result.corrupted).toEqual(['workspace/f33.txt']);
    expect(result.files).toBe(59);
    expect((await fs.readdir(target)).sort()).toEqual(Object.keys(files).filter((name) => name !== 'f33.txt').sort());
  });

  it('does the work on the event loop\'s thread when no worker can start, and says so', async () => {
    const broken = new WorkPool(1, 1_000, { startBytes: 0, url: new URL('./no-such-worker.js', import.meta.url) });
    broken.warm();
    await eventually(() => broken.failure !== undefined);
    const logged: string[] = [];
    const bench = await engineBench(tempDir, { ...options, pool: broken, log: (message) => logged.push(message) });
    const workspace = await tempDir();
    await writeFiles(workspace, { 'a.txt': 'a', 'b.bin': content('b', 100_000) });
    const { snapshot } = await bench.engine.snapshot(sourcesFor('hello', workspace), 'api');
    expect(snapshot.files).toBe(2);
    const target = join(await tempDir(), 'restored');
    await (await bench.freshEngine({ pool: broken })).restore('hello', { roots: workspaceRoot(target) });
    expect(await describeTree(target)).toEqual(await describeTree(workspace));
    expect(logged.filter((line) => line.includes("on the event loop's thread instead"))).toHaveLength(2);
    await broken.close();
  });
});

describe('when worker threads are worth starting', () => {
  it('not for one workspace of tens of megabytes; once large work keeps coming; and always while they run', async () => {
    const MiB = 1024 * 1024;
    const pool = new WorkPool(1, 5_000);
    expect(pool.wants(1 * MiB, 16 * MiB)).toBe(false); // small work never
    expect(pool.wants(50 * MiB, 16 * MiB)).toBe(false);
    expect(pool.wants(50 * MiB, 16 * MiB)).toBe(false);
    expect(pool.wants(50 * MiB, 16 * MiB)).toBe(true); // 150 MiB within a minute
    pool.warm();
    await eventually(() => pool.online === 1);
    expect(pool.wants(20 * MiB, 16 * MiB)).toBe(true);
    expect(pool.wants(10 * MiB, 16 * MiB)).toBe(false);
    await pool.close();
  });
});

/** Rewrites a snapshot's index as an earlier build wrote it: each file's hash by `hashOf`, b.txt's wrong. */
async function rewriteIndex(storeDir: string, id: string, workspace: string, edit: (index: SnapshotIndex) => void, hashOf: (bytes: Buffer | string) => string, field: string): Promise<void> {
  const index = await readIndex(storeDir, 'hello', id);
  edit(index);
  for (const entry of index.roots[0].entries) {
    if (entry.type !== 'file') continue;
    const bytes = entry.path === 'b.txt' ? 'not two' : await fs.readFile(join(workspace, entry.path!));
    delete (entry as { hash?: string }).hash;
    Object.assign(entry, { [field]: hashOf(bytes) });
  }
  await fs.writeFile(join(storeDir, 'servers/hello/snapshots', `${id}.json`), JSON.stringify(index));
}

describe('an index of an earlier build', () => {
  const tempDir = useTempDirs();

  it('with BLAKE2b is still restored, every file checked against it', async () => {
    const bench = await engineBench(tempDir);
    const workspace = await tempDir();
    await writeFiles(workspace, { 'a.txt': 'one', 'b.txt': 'two', 'sub/c.bin': content('c', 70_000) });
    const { snapshot } = await bench.engine.snapshot(sourcesFor('hello', workspace), 'api');
    await rewriteIndex(bench.storeDir, snapshot.id, workspace, (index) => {
      index.hash = 'blake2b512/256';
    }, (bytes) => createHash('blake2b512').update(bytes).digest('hex').slice(0, 64), 'hash');

    const target = join(await tempDir(), 'restored');
    const fresh = await bench.freshEngine();
    const result = await fresh.restore('hello', { roots: workspaceRoot(target) });
    expect(result.corrupted).toEqual(['workspace/b.txt']);
    expect(await fs.readFile(join(target, 'a.txt'), 'utf8')).toBe('one');
    expect((await fs.readFile(join(target, 'sub/c.bin'))).equals(content('c', 70_000))).toBe(true);
    const next = await fresh.snapshot(sourcesFor('hello', target), 'api');
    expect(await readIndex(bench.storeDir, 'hello', next.snapshot.id)).toMatchObject({ hash: 'blake3' });
  });

  it('of the first format (SHA-256) is still restored, every file checked against its SHA-256', async () => {
    const bench = await engineBench(tempDir);
    const workspace = await tempDir();
    await writeFiles(workspace, { 'a.txt': 'one', 'b.txt': 'two', 'sub/c.bin': content('c', 70_000) });
    const { snapshot } = await bench.engine.snapshot(sourcesFor('hello', workspace), 'api');
    // Written as the first format was: no `hash`, each file's SHA-256 in `sha256`.
    await rewriteIndex(bench.storeDir, snapshot.id, workspace, (index) => {
      delete (index as { hash?: string }).hash;
      index.format = 'devbox-snapshot/1' as never;
    }, (bytes) => createHash('sha256').update(bytes).digest('hex'), 'sha256');

    const target = join(await tempDir(), 'restored');
    const fresh = await bench.freshEngine();
    const result = await fresh.restore('hello', { roots: workspaceRoot(target) });
    expect(result.corrupted).toEqual(['workspace/b.txt']);
    expect(await fs.readFile(join(target, 'a.txt'), 'utf8')).toBe('one');
    expect((await fs.readFile(join(target, 'sub/c.bin'))).equals(content('c', 70_000))).toBe(true);
    // The next snapshot is taken with the current hash, from the files themselves.
    await writeFiles(target, { 'b.txt': 'two' });
    const next = await fresh.snapshot(sourcesFor('hello', target), 'api');
    expect(next.unchanged).toBe(false);
    expect(await readIndex(bench.storeDir, 'hello', next.snapshot.id)).toMatchObject({ format: 'devbox-snapshot/2', hash: 'blake3' });
  });
});

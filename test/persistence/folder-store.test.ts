import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FolderStore } from '../../src/persistence/folder-store.ts';
import { StoreError } from '../../src/persistence/types.ts';
import { eventually } from '../helpers/wait.ts';
import { content, useTempDirs } from './fixtures.ts';

describe('FolderStore', () => {
  const tempDir = useTempDirs();

  it('puts atomically: a reader sees the old object or the new one, never part of one', async () => {
    const store = new FolderStore(await tempDir());
    const versions = [content('a', 4 * 1024 * 1024), content('b', 3 * 1024 * 1024)];
    await store.put('objects/big', versions[0]);
    let writing = true;
    const writer = (async () => {
      for (let i = 1; i <= 20; i++) await store.put('objects/big', versions[i % 2]);
      writing = false;
    })();
    let reads = 0;
    while (writing) {
      const seen = await store.get('objects/big');
      expect(versions.some((version) => version.equals(seen!))).toBe(true);
      reads++;
    }
    await writer;
    expect(reads).toBeGreaterThan(0);
    expect(await store.list('objects/')).toEqual(['objects/big']);
  });

  it('puts after what it must follow: nothing at the key until then, and nothing at all when that fails', async () => {
    const dir = await tempDir();
    const store = new FolderStore(dir);
    let objectsStored!: () => void;
    const stored = new Promise<void>((resolve) => (objectsStored = resolve));
    const put = store.put('servers/a/snapshots/one.json', Buffer.from('{"index":1}'), undefined, { after: stored });
    // Prepared (written under a temporary name) but not at its key.
    await eventually(async () => (await fs.readdir(join(dir, 'servers/a/snapshots')).catch(() => [])).length === 1);
    expect(await store.get('servers/a/snapshots/one.json')).toBeUndefined();
    expect(await store.list('servers/')).toEqual([]);
    objectsStored();
    await put;
    expect((await store.get('servers/a/snapshots/one.json'))!.toString()).toBe('{"index":1}');

    const failure = new StoreError('transient', 'an object could not be stored', 'try again');
    await expect(store.put('servers/a/snapshots/two.json', Buffer.from('{}'), undefined, { after: Promise.reject(failure) })).rejects.toBe(failure);
    expect(await fs.readdir(join(dir, 'servers/a/snapshots'))).toEqual(['one.json']);
  });

  it('makes batched puts durable with one flush of their folder, and waits for a flush under way', async () => {
    const dir = await tempDir();
    const store = new FolderStore(dir);
    const synced: string[] = [];
    const syncFolder = (store as unknown as { syncFolder(dir: string): Promise<void> }).syncFolder.bind(store);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    (store as unknown as { syncFolder(dir: string): Promise<void> }).syncFolder = async (folder) => {
      synced.push(folder);
      if (synced.length === 1) await held;
      return syncFolder(folder);
    };
    await Promise.all(['objects/a', 'objects/b', 'objects/c'].map((key) => store.put(key, Buffer.from(key), undefined, { batch: true })));
    expect(synced).toEqual([]);
    expect((await store.get('objects/b'))?.toString()).toBe('objects/b');
    let firstDone = false;
    const first = store.flush().then(() => (firstDone = true));
    // A second flush with nothing new still waits for the first: the puts it covers returned before it began.
    let secondDone = false;
    const second = store.flush().then(() => (secondDone = true));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect([firstDone, secondDone]).toEqual([false, false]);
    release();
    await Promise.all([first, second]);
    expect(synced).toEqual([join(dir, 'objects')]);
    // A put that is not batched flushes its folder itself.
    await store.put('servers/x/snapshots/1.json', Buffer.from('{}'));
    expect(synced).toEqual([join(dir, 'objects'), join(dir, 'servers/x/snapshots')]);
  });

  it('answers undefined for a missing key, lists keys at any depth under a prefix, deletes what is there or not', async () => {
    const dir = await tempDir();
    const store = new FolderStore(dir);
    expect(await store.get('servers/hello/snapshots/x.json')).toBeUndefined();
    expect(await store.list('servers/')).toEqual([]);
    await store.put('servers/hello/snapshots/1.json', Buffer.from('1'));
    await store.put('servers/hello/deleted.json', Buffer.from('{}'));
    await store.put('servers/hello-2/snapshots/2.json', Buffer.from('2'));
    await store.put('objects/abc', Buffer.from('abc'));
    expect((await store.list('servers/hello/')).sort()).toEqual(['servers/hello/deleted.json', 'servers/hello/snapshots/1.json']);
    expect((await store.list('servers/hello')).sort()).toHaveLength(3);
    expect((await store.list('')).sort()).toHaveLength(4);
    expect((await store.get('objects/abc'))?.toString()).toBe('abc');
    await store.delete('objects/abc');
    await store.delete('objects/abc');
    expect(await store.get('objects/abc')).toBeUndefined();
    await store.delete('servers/hello/snapshots/1.json');
    await store.delete('servers/hello/deleted.json');
    // Folders a delete leaves empty go too.
    expect((await fs.readdir(join(dir, 'servers'))).sort()).toEqual(['hello-2']);
    expect(store.description).toBe(`folder ${dir}`);
  });

  it('refuses keys that could leave its folder or that it does not allow', async () => {
    const store = new FolderStore(await tempDir());
    for (const key of ['../escape', 'a/../../b', '/etc/passwd', 'a//b', 'a/./b', 'with space', 'a/', '']) {
      await expect(store.put(key, Buffer.from('x')), key).rejects.toThrow(/invalid store key/);
    }
    await expect(store.get('../x')).rejects.toThrow(/invalid store key/);
  });

  it('says the folder is missing, and does not create it', async () => {
    const dir = join(await tempDir(), 'not-there');
    const store = new FolderStore(dir);
    for (const attempt of [() => store.put('objects/a', Buffer.from('a')), () => store.get('objects/a'), () => store.list('objects/')]) {
      const error = await attempt().catch((e) => e);
      expect(error).toBeInstanceOf(StoreError);
      expect(error).toMatchObject({ failure: 'missing', hint: expect.stringContaining(dir) });
    }
    await expect(fs.stat(dir)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('says the folder is missing when its path runs through a file', async () => {
    const file = join(await tempDir(), 'a-file');
    await fs.writeFile(file, 'x');
    const error = await new FolderStore(join(file, 'store')).put('objects/a', Buffer.from('a')).catch((e) => e);
    expect(error).toMatchObject({ name: 'StoreError', failure: 'missing' });
  });

  // root writes through any mode bits, so the refusal shows only for another user.
  it.skipIf(process.getuid?.() === 0)('says it is denied, and what to do, when the folder is not writable', async () => {
    const dir = await tempDir();
    await fs.chmod(dir, 0o555);
    const error = await new FolderStore(dir).put('objects/a', Buffer.from('a')).catch((e) => e);
    expect(error).toMatchObject({ name: 'StoreError', failure: 'denied', hint: `make ${dir} writable by the service's user` });
  });
});

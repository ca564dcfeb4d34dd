// Replacing a file whole: readers and concurrent writers see one complete version, the mode is
// the one asked for, and a write that fails leaves the old file and no temporary behind.
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isTemporaryName, writeFileAtomic } from '../../src/core/atomic-write.ts';

let dir: string;
beforeEach(async () => {
  dir = await fs.mkdtemp(join(tmpdir(), 'devbox-atomic-'));
});
afterEach(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

const modeOf = async (path: string) => (await fs.stat(path)).mode & 0o777;

describe('writeFileAtomic', () => {
  it('lets concurrent writers and readers see only whole versions, and leaves no temporary file', async () => {
    const file = join(dir, 'record.json');
    // Versions large enough that a write takes several system calls, each of one repeated byte.
    const versions = Array.from({ length: 16 }, (_, i) => Buffer.alloc(512 * 1024 + i, 0x41 + i));
    await writeFileAtomic(file, versions[0]);

    let writing = true;
    const seen = new Set<number>();
    const reader = (async () => {
      while (writing) {
        const bytes = await fs.readFile(file);
        const version = versions.findIndex((candidate) => candidate.equals(bytes));
        expect(version, `a read of ${bytes.length} bytes that no writer wrote`).toBeGreaterThanOrEqual(0);
        seen.add(version);
      }
    })();
    await Promise.all(versions.map((bytes) => writeFileAtomic(file, bytes, { durable: true })));
    writing = false;
    await reader;

    const final = await fs.readFile(file);
    expect(versions.some((bytes) => bytes.equals(final))).toBe(true);
    expect(seen.size).toBeGreaterThan(0);
    expect(await fs.readdir(dir)).toEqual(['record.json']);
  });

  it('gives the file the mode asked for, whatever the umask, already while its bytes are written', async () => {
    const secret = join(dir, 'token');
    let pendingMode: number | undefined;
    await writeFileAtomic(secret, 'dapi-secret\n', {
      mode: 0o600,
      durable: true,
      beforeRename: async () => {
        const [temporary] = (await fs.readdir(dir)).filter(isTemporaryName);
        pendingMode = await modeOf(join(dir, temporary));
      },
    });
    expect(pendingMode).toBe(0o600);
    expect(await modeOf(secret)).toBe(0o600);
    expect(await fs.readFile(secret, 'utf8')).toBe('dapi-secret\n');

    // Wider than the usual umask (022) allows on creation: set exactly all the same.
    const shared = join(dir, 'shared');
    await writeFileAtomic(shared, 'x', { mode: 0o666 });
    expect(await modeOf(shared)).toBe(0o666);
    // Replacing a file gives the new one the mode asked for, not the old one's.
    await writeFileAtomic(shared, 'y', { mode: 0o755 });
    expect(await modeOf(shared)).toBe(0o755);
  });

  it('leaves the old file and no temporary file when the write is refused before the rename', async () => {
    const file = join(dir, 'status.yaml');
    await fs.writeFile(file, 'old\n');
    const refusal = new Error('the objects it refers to were not flushed');
    await expect(writeFileAtomic(file, 'new\n', { durable: true, beforeRename: () => Promise.reject(refusal) })).rejects.toBe(refusal);
    expect(await fs.readFile(file, 'utf8')).toBe('old\n');
    expect(await fs.readdir(dir)).toEqual(['status.yaml']);
  });

  it('leaves what is there and no temporary file when the rename fails', async () => {
    // A non-empty folder where the file should go: the rename cannot replace it.
    const taken = join(dir, 'config.json');
    await fs.mkdir(taken);
    await fs.writeFile(join(taken, 'inside'), 'kept');
    await expect(writeFileAtomic(taken, '{}')).rejects.toThrow();
    expect(await fs.readFile(join(taken, 'inside'), 'utf8')).toBe('kept');
    expect(await fs.readdir(dir)).toEqual(['config.json']);
  });

  it('makes a missing folder only through makeFolder, and otherwise fails writing nothing', async () => {
    const file = join(dir, 'status', 'alpha.yaml');
    await expect(writeFileAtomic(file, 'a')).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await fs.readdir(dir)).toEqual([]);

    const made: string[] = [];
    await writeFileAtomic(file, 'a', { makeFolder: (folder) => (made.push(folder), fs.mkdir(folder)) });
    expect(made).toEqual([join(dir, 'status')]);
    expect(await fs.readFile(file, 'utf8')).toBe('a');
  });

  it('names its temporary files so callers listing a folder can tell them apart', () => {
    expect(isTemporaryName('.alpha.yaml.0123456789ab.tmp')).toBe(true);
    expect(isTemporaryName('alpha.yaml')).toBe(false);
    expect(isTemporaryName('.alpha.yaml')).toBe(false);
    expect(isTemporaryName('alpha.yaml.tmp')).toBe(false);
  });
});

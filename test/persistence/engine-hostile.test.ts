import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { WorkspaceTooLargeError } from '../../src/persistence/types.ts';
import { content, describeTree, engineBench, hexPath, sourcesFor, useTempDirs, workspaceRoot, writeFiles } from './fixtures.ts';

describe('hostile workspace content', () => {
  const tempDir = useTempDirs();

  it('stores a symlink to /etc as a link, never following it, and restores it as a link', async () => {
    const bench = await engineBench(tempDir);
    const workspace = await tempDir();
    await writeFiles(workspace, { 'a.txt': 'a' });
    await fs.symlink('/etc', join(workspace, 'etc-link'));
    await fs.symlink('/etc/hostname', join(workspace, 'host-link'));

    const { snapshot } = await bench.engine.snapshot(sourcesFor('hello', workspace), 'api');
    expect(snapshot).toMatchObject({ files: 3, bytes: 1, skipped: [] });

    const target = join(await tempDir(), 'restored');
    await (await bench.freshEngine()).restore('hello', { roots: workspaceRoot(target) });
    expect((await fs.lstat(join(target, 'etc-link'))).isSymbolicLink()).toBe(true);
    expect(await fs.readlink(join(target, 'etc-link'))).toBe('/etc');
    expect(await fs.readlink(join(target, 'host-link'))).toBe('/etc/hostname');
  });

  it('skips a FIFO and a socket, reports them, and still completes', async () => {
    const bench = await engineBench(tempDir);
    const workspace = await tempDir();
    await writeFiles(workspace, { 'a.txt': 'a', 'sub/b.txt': 'b' });
    execFileSync('mkfifo', [join(workspace, 'sub/pipe')]);
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(join(workspace, 'editor.sock'), resolve));
    try {
      const { snapshot } = await bench.engine.snapshot(sourcesFor('hello', workspace), 'api');
      expect(snapshot.files).toBe(2);
      expect(snapshot.skipped).toEqual(expect.arrayContaining([
        { root: 'workspace', path: 'sub/pipe', reason: 'fifo' },
        { root: 'workspace', path: 'editor.sock', reason: 'socket' },
      ]));
      expect(snapshot.skipped).toHaveLength(2);
    } finally {
      server.close();
    }
  });

  it('keeps names with a newline and with bytes that are not UTF-8 exactly', async () => {
    const bench = await engineBench(tempDir);
    const workspace = await tempDir();
    const latin1Dir = Buffer.from([0x63, 0x61, 0x66, 0xe9]); // "café" in Latin-1: not UTF-8
    const badName = Buffer.from([0x66, 0xff, 0xfe, 0x0a, 0x2e, 0x74]);
    const root = Buffer.from(workspace);
    const at = (...parts: Buffer[]) => Buffer.concat([root, ...parts.flatMap((part) => [Buffer.from('/'), part])]);
    await fs.writeFile(join(workspace, 'line\nbreak.txt'), 'newline');
    await fs.mkdir(at(latin1Dir));
    await fs.writeFile(at(latin1Dir, badName), 'bytes');
    await fs.symlink(badName, at(Buffer.from('link-to-bad')));
    await fs.writeFile(join(workspace, 'ünïcödé ✓.md'), 'utf-8 is kept as text');
    await fs.writeFile(join(workspace, 'replacement \uFFFD char.txt'), 'U+FFFD in a name that is UTF-8');
    const before = await describeTree(workspace);

    const { snapshot } = await bench.engine.snapshot(sourcesFor('hello', workspace), 'api');
    expect(snapshot.files).toBe(5);

    const target = join(await tempDir(), 'restored');
    await (await bench.freshEngine()).restore('hello', { roots: workspaceRoot(target) });
    const after = await describeTree(target);
    expect(after).toEqual(before);
    expect(after.has(hexPath('line\nbreak.txt'))).toBe(true);
    expect(after.has(`${latin1Dir.toString('hex')}/${badName.toString('hex')}`)).toBe(true);
    // A name that is UTF-8 is kept as text, even one listed again as raw bytes.
    const index = JSON.parse(await fs.readFile(join(bench.storeDir, 'servers/hello/snapshots', `${snapshot.id}.json`), 'utf8'));
    expect(index.roots[0].entries.map((entry: { path?: string }) => entry.path)).toContain('replacement \uFFFD char.txt');
  });

  it('leaves out the temporary file of a restore that a crash cut short', async () => {
    const bench = await engineBench(tempDir);
    const workspace = await tempDir();
    await writeFiles(workspace, { 'a.txt': 'a', 'src/.devbox-restore-0a1b2c3d4e5f-7': 'half of a file' });
    const { snapshot } = await bench.engine.snapshot(sourcesFor('hello', workspace), 'api');
    expect(snapshot.files).toBe(1);
  });

  it('keeps a 0-byte file', async () => {
    const bench = await engineBench(tempDir);
    const workspace = await tempDir();
    await writeFiles(workspace, { 'empty': '', 'dir/also-empty': '' });
    const { snapshot } = await bench.engine.snapshot(sourcesFor('hello', workspace), 'api');
    expect(snapshot).toMatchObject({ files: 2, bytes: 0, uploadedBytes: 0 });
    const target = join(await tempDir(), 'restored');
    await (await bench.freshEngine()).restore('hello', { roots: workspaceRoot(target) });
    expect((await fs.stat(join(target, 'empty'))).size).toBe(0);
    expect((await fs.stat(join(target, 'dir/also-empty'))).size).toBe(0);
  });

  it('reads a file again that changed while being read', async () => {
    const workspace = await tempDir();
    const moving = join(workspace, 'moving.txt');
    let rewrites = 0;
    const bench = await engineBench(tempDir, {
      afterRead: async (abs) => {
        if (abs.toString() === moving && rewrites++ === 0) await fs.writeFile(moving, 'the second version, longer');
      },
    });
    await writeFiles(workspace, { 'moving.txt': 'first', 'still.txt': 'still' });

    const { snapshot } = await bench.engine.snapshot(sourcesFor('hello', workspace), 'api');
    expect(snapshot.skipped).toEqual([]);
    const target = join(await tempDir(), 'restored');
    await (await bench.freshEngine()).restore('hello', { roots: workspaceRoot(target) });
    expect(await fs.readFile(join(target, 'moving.txt'), 'utf8')).toBe('the second version, longer');
  });

  it('keeps what it read of a file that keeps changing, reports it, and reads it again next time', async () => {
    const workspace = await tempDir();
    const moving = join(workspace, 'moving.txt');
    const versions = ['v0'];
    let writer = true;
    const bench = await engineBench(tempDir, {
      afterRead: async (abs) => {
        // A writer that rewrites the file after every read, a bounded number of times.
        if (abs.toString() !== moving || !writer || versions.length > 10) return;
        versions.push(`version ${versions.length} ${'x'.repeat(versions.length)}`);
        await fs.writeFile(moving, versions.at(-1)!);
      },
    });
    await writeFiles(workspace, { 'moving.txt': versions[0] });

    const first = await bench.engine.snapshot(sourcesFor('hello', workspace), 'api');
    expect(first.snapshot.skipped).toEqual([{ root: 'workspace', path: 'moving.txt', reason: 'changed-while-read' }]);
    const target = join(await tempDir(), 'restored');
    await (await bench.freshEngine()).restore('hello', { roots: workspaceRoot(target) });
    const kept = await fs.readFile(join(target, 'moving.txt'), 'utf8');
    expect(versions.slice(0, -1)).toContain(kept);

    writer = false;
    const second = await bench.engine.snapshot(sourcesFor('hello', workspace), 'api');
    expect(second.unchanged).toBe(false);
    const again = join(await tempDir(), 'restored');
    await (await bench.freshEngine()).restore('hello', { roots: workspaceRoot(again) });
    expect(await fs.readFile(join(again, 'moving.txt'), 'utf8')).toBe(versions.at(-1));
  });

  it('refuses a workspace over the limit with a clear message, and the previous snapshot stays current', async () => {
    const bench = await engineBench(tempDir);
    const workspace = await tempDir();
    await writeFiles(workspace, { 'a.txt': 'small' });
    const first = await bench.engine.snapshot(sourcesFor('hello', workspace, { maxBytes: 2 * 1024 * 1024 }), 'api');
    await writeFiles(workspace, { 'data/huge.bin': content('huge', 3 * 1024 * 1024) });
    bench.store.reset();

    const refused = await bench.engine.snapshot(sourcesFor('hello', workspace, { maxBytes: 2 * 1024 * 1024 }), 'api').catch((error) => error);
    expect(refused).toBeInstanceOf(WorkspaceTooLargeError);
    expect(refused.message).toBe('the workspace of server hello holds 3 MB, more than the limit of 2 MB (persistence.maxWorkspaceMb): exclude folders with persistence.exclude, or raise the limit');
    expect(bench.store.puts).toEqual([]);
    expect((await bench.engine.list('hello')).map((info) => info.id)).toEqual([first.snapshot.id]);
  });
});

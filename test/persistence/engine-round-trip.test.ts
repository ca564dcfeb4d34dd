import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { content, describeTree, engineBench, sourcesFor, useTempDirs, workspaceRoot, writeFiles } from './fixtures.ts';

describe('a snapshot restored into an empty folder', () => {
  const tempDir = useTempDirs();

  it('gives back every file byte-identical, with folders, empty files, modes, symlinks and mtimes', async () => {
    const bench = await engineBench(tempDir, { smallFileBytes: 64 * 1024, packBytes: 256 * 1024, chunkBytes: 256 * 1024 });
    const workspace = await tempDir();
    const small: Record<string, Buffer> = {};
    for (let i = 0; i < 300; i++) small[`many/dir${i % 7}/file-${i}.txt`] = content(`small ${i}`, (i * 37) % 5000);
    await writeFiles(workspace, {
      ...small,
      'src/a/b/c/deep.ts': 'export const deep = true;\n',
      'empty.txt': '',
      'medium.bin': content('medium', 100_000), // above smallFileBytes: an object of its own
      'large.bin': content('large', 700_000), // above chunkBytes: three objects
      'run.sh': '#!/bin/sh\necho hi\n',
      'secret.txt': 'only mine\n',
    });
    await fs.chmod(join(workspace, 'run.sh'), 0o755);
    await fs.chmod(join(workspace, 'secret.txt'), 0o600);
    await fs.mkdir(join(workspace, 'empty-dir/nested-empty'), { recursive: true });
    await fs.chmod(join(workspace, 'empty-dir'), 0o750);
    await fs.symlink('src/a', join(workspace, 'link-to-src'));
    await fs.symlink('nowhere/at/all', join(workspace, 'dangling'));
    const before = await describeTree(workspace);
    const sources = sourcesFor('hello', workspace);

    const { snapshot, unchanged } = await bench.engine.snapshot(sources, 'api');
    expect(unchanged).toBe(false);
    expect(snapshot).toMatchObject({ name: 'hello', uid: 'uid-hello', reason: 'api', files: 308, skipped: [] });
    expect(snapshot.bytes).toBe(Object.values(small).reduce((n, b) => n + b.length, 0) + 26 + 100_000 + 700_000 + 18 + 10);

    const target = join(await tempDir(), 'restored');
    const restored = await (await bench.freshEngine()).restore('hello', { roots: workspaceRoot(target) });
    expect(await describeTree(target)).toEqual(before);
    expect(restored).toMatchObject({
      manifestText: sources.manifestText, status: sources.status, extensions: sources.extensions,
      files: 308, bytes: snapshot.bytes, keptNewer: [], corrupted: [],
    });
    expect(restored.snapshot.id).toBe(snapshot.id);
    for (const path of ['run.sh', 'large.bin', 'empty-dir', 'dangling']) {
      const [was, is] = await Promise.all([fs.lstat(join(workspace, path)), fs.lstat(join(target, path))]);
      expect(Math.abs(was.mtimeMs - is.mtimeMs)).toBeLessThan(1);
    }
  });

  it('keeps thousands of small files in a few objects', async () => {
    const bench = await engineBench(tempDir);
    const workspace = await tempDir();
    const files: Record<string, Buffer> = {};
    for (let i = 0; i < 2000; i++) files[`d${i % 20}/f${i}.txt`] = content(`f${i}`, 1000);
    await writeFiles(workspace, files);

    await bench.engine.snapshot(sourcesFor('hello', workspace), 'api');
    // One pack of 2 MB and the index.
    expect(bench.store.puts.filter((key) => key.startsWith('objects/'))).toHaveLength(1);
    expect(bench.store.puts.filter((key) => key.startsWith('servers/hello/snapshots/'))).toHaveLength(1);
  });

  it('keeps only the named entries of the user settings folder, beside the workspace', async () => {
    const bench = await engineBench(tempDir);
    const workspace = await tempDir();
    const user = await tempDir();
    await writeFiles(workspace, { 'main.py': 'print(1)\n' });
    await writeFiles(user, {
      'settings.json': '{"editor.fontSize": 14}', 'keybindings.json': '[]', 'snippets/py.json': '{}',
      'logs/main.log': 'noise', 'CachedData/x': 'noise',
    });
    const roots = [{ id: 'workspace' as const, dir: workspace }, { id: 'user' as const, dir: user, only: ['settings.json', 'keybindings.json', 'snippets'] }];
    await bench.engine.snapshot(sourcesFor('hello', workspace, { roots }), 'stop');

    const into = await tempDir();
    const restoredRoots = [{ id: 'workspace' as const, dir: join(into, 'ws') }, { id: 'user' as const, dir: join(into, 'user') }];
    const result = await (await bench.freshEngine()).restore('hello', { roots: restoredRoots });
    expect(result.files).toBe(4);
    expect(await fs.readFile(join(into, 'ws/main.py'), 'utf8')).toBe('print(1)\n');
    expect((await fs.readdir(join(into, 'user'))).sort()).toEqual(['keybindings.json', 'settings.json', 'snippets']);
    expect(await fs.readFile(join(into, 'user/snippets/py.json'), 'utf8')).toBe('{}');
  });

  it('answers the manifest, status and extensions without touching any folder or object when given no roots', async () => {
    const bench = await engineBench(tempDir);
    const workspace = await tempDir();
    await writeFiles(workspace, { 'a.txt': 'a' });
    const sources = sourcesFor('hello', workspace, { status: { phase: 'Running', port: 8012 } });
    await bench.engine.snapshot(sources, 'api');
    bench.store.reset();

    const result = await (await bench.freshEngine()).restore('hello', { roots: [] });
    expect(result).toMatchObject({ manifestText: sources.manifestText, status: sources.status, extensions: sources.extensions, files: 0 });
    expect(bench.store.gets.filter((key) => key.startsWith('objects/'))).toEqual([]);
  });
});

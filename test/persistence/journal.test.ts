// The change journal (inotify) behind incremental snapshots: every kind of change made between two
// snapshots is in the second exactly as a full walk of the same tree records it, the journal is
// trusted only while it can be, and it stops watching when told.
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { SnapshotEngine } from '../../src/persistence/engine.ts';
import type { SnapshotIndex } from '../../src/persistence/index-file.ts';
import type { SnapshotSources } from '../../src/persistence/types.ts';
import { content, describeTree, engineBench, sourcesFor, useTempDirs, workspaceRoot, writeFiles, type Bench } from './fixtures.ts';

async function readIndex(storeDir: string, name: string, id: string): Promise<SnapshotIndex> {
  return JSON.parse(await fs.readFile(join(storeDir, 'servers', name, 'snapshots', `${id}.json`), 'utf8'));
}

/** A snapshot's entries as a walk and a read made them (not where the content went). */
function entriesOf(index: SnapshotIndex) {
  return index.roots.flatMap((root) => root.entries.map((entry) => {
    const { parts: _parts, ino: _ino, ...rest } = entry as typeof entry & { parts?: unknown; ino?: unknown };
    return { root: root.id, ...rest };
  }));
}

describe('the change journal', () => {
  const tempDir = useTempDirs();
  const engines: SnapshotEngine[] = [];
  afterEach(() => {
    for (const engine of engines.splice(0)) engine.close();
  });

  async function setUp(limits: Record<string, number> = {}) {
    const bench = await engineBench(tempDir, { journal: limits });
    engines.push(bench.engine);
    const workspace = await tempDir();
    const sources: SnapshotSources = sourcesFor('hello', workspace, { watch: true, exclude: ['build/'] });
    return { bench, workspace, sources };
  }

  /** Takes a snapshot with the journaled engine and one with a fresh engine that walks everything; both must record the same entries. */
  async function bothAgree(bench: Bench, sources: SnapshotSources) {
    const journaled = await bench.engine.snapshot(sources, 'api');
    const walker = await bench.freshEngine({ journal: false });
    const walked = await walker.snapshot({ ...sources, name: 'full-walk', uid: 'uid-full-walk' }, 'api');
    const fromJournal = entriesOf(await readIndex(bench.storeDir, 'hello', journaled.snapshot.id));
    const fromWalk = entriesOf(await readIndex(bench.storeDir, 'full-walk', walked.snapshot.id));
    expect(fromJournal).toEqual(fromWalk);
    expect(journaled.snapshot.skipped).toEqual(walked.snapshot.skipped);
    return { journaled, fromJournal };
  }

  it('records every kind of change as a full walk does, and walks only once', async () => {
    const { bench, workspace, sources } = await setUp();
    await writeFiles(workspace, {
      'a.txt': 'one', 'keep/b.txt': 'two', 'keep/deep/c.txt': 'three', 'gone/d.txt': 'four', 'moved/e.txt': 'five',
      'typed/f': 'a file, then a folder', 'build/out.js': 'excluded', 'mode.sh': 'echo hi',
    });
    await bench.engine.snapshot(sources, 'api');
    expect(bench.engine.journalState('hello')).toEqual([expect.objectContaining({ root: 'workspace', full: 1, patched: 0 })]);
    expect(bench.engine.journalState('hello')[0].watching).toBeGreaterThanOrEqual(6);

    // Every kind of change, some in folders no change touched before.
    await fs.writeFile(join(workspace, 'a.txt'), 'one, changed');
    await writeFiles(workspace, { 'keep/deep/new.txt': 'new in an old folder', 'fresh/x/y.txt': 'a new tree', 'build/more.js': 'excluded' });
    await fs.rm(join(workspace, 'gone'), { recursive: true });
    await fs.rename(join(workspace, 'moved'), join(workspace, 'renamed'));
    await fs.writeFile(join(workspace, 'renamed/e2.txt'), 'written in the moved folder');
    await fs.rm(join(workspace, 'typed/f'));
    await fs.mkdir(join(workspace, 'typed/f'));
    await fs.writeFile(join(workspace, 'typed/f/inside.txt'), 'now a folder');
    await fs.chmod(join(workspace, 'mode.sh'), 0o755);
    await fs.symlink('a.txt', join(workspace, 'link'));
    const { journaled, fromJournal } = await bothAgree(bench, sources);
    expect(journaled.unchanged).toBe(false);
    const paths = fromJournal.map((entry) => entry.path);
    expect(paths).toEqual(expect.arrayContaining(['fresh/x/y.txt', 'renamed/e.txt', 'renamed/e2.txt', 'typed/f/inside.txt', 'link', 'keep/deep/new.txt']));
    expect(paths).not.toEqual(expect.arrayContaining(['gone/d.txt']));
    expect(paths.some((path) => path?.startsWith('build') || path?.startsWith('moved'))).toBe(false);
    expect(bench.engine.journalState('hello')[0]).toMatchObject({ full: 1, patched: 1 });

    // A change in a folder that came with the last snapshot (watched since) is seen too.
    await fs.writeFile(join(workspace, 'fresh/x/y.txt'), 'changed in a new folder');
    await fs.writeFile(join(workspace, 'renamed/e.txt'), 'changed in the moved folder');
    await bothAgree(bench, sources);
    expect(bench.engine.journalState('hello')[0]).toMatchObject({ full: 1, patched: 2 });

    // And the tree comes back as it is.
    const target = join(await tempDir(), 'restored');
    await (await bench.freshEngine()).restore('hello', { roots: workspaceRoot(target) });
    const expected = await describeTree(workspace);
    const excluded = Buffer.from('build').toString('hex'); // the tree's names are in hex
    for (const key of [...expected.keys()]) if (key.startsWith(excluded)) expected.delete(key);
    expect(await describeTree(target)).toEqual(expected);
  });

  it('sees a change made just before the snapshot is asked for', async () => {
    const { bench, workspace, sources } = await setUp();
    const files: Record<string, string> = {};
    for (let i = 0; i < 5; i++) files[`f${i}.txt`] = 'before';
    await writeFiles(workspace, files);
    // Changed long ago: a record with the same stat is kept without reading the file (files changed within the last second are always read again).
    const anHourAgo = new Date(Date.now() - 3600_000);
    for (const path of Object.keys(files)) await fs.utimes(join(workspace, path), anHourAgo, anHourAgo);
    await bench.engine.snapshot(sources, 'api');
    for (let round = 0; round < 5; round++) {
      const text = `changed in round ${round}`;
      await fs.writeFile(join(workspace, `f${round}.txt`), text);
      const { snapshot } = await bench.engine.snapshot(sources, 'api');
      const record = (await readIndex(bench.storeDir, 'hello', snapshot.id)).roots[0].entries.find((entry) => entry.path === `f${round}.txt`);
      expect(record).toMatchObject({ size: text.length });
    }
    expect(bench.engine.journalState('hello')[0]).toMatchObject({ full: 1, patched: 5 });
  });

  it('is not trusted after more changes than it may note: the next snapshot walks everything', async () => {
    const { bench, workspace, sources } = await setUp({ maxEvents: 20 });
    await writeFiles(workspace, { 'a.txt': 'one', 'storm/f0.txt': 'before' });
    await bench.engine.snapshot(sources, 'api');
    // In a folder watched already (a new folder is walked afresh: the changes in it are not noted one by one).
    const many: Record<string, string> = {};
    for (let i = 0; i < 40; i++) many[`storm/f${i}.txt`] = `file ${i}`;
    await writeFiles(workspace, many);
    await bothAgree(bench, sources);
    expect(bench.engine.journalState('hello')[0]).toMatchObject({ full: 2, patched: 0 });
    // Trusted again after that walk.
    await fs.writeFile(join(workspace, 'storm/f3.txt'), 'changed');
    await bothAgree(bench, sources);
    expect(bench.engine.journalState('hello')[0]).toMatchObject({ full: 2, patched: 1 });
  });

  it('walks everything, and says why once, for a tree with more folders than it may watch', async () => {
    const logged: string[] = [];
    const bench = await engineBench(tempDir, { journal: { maxFolders: 3 }, log: (line) => logged.push(line) });
    engines.push(bench.engine);
    const workspace = await tempDir();
    const sources = sourcesFor('hello', workspace, { watch: true });
    await writeFiles(workspace, { 'a/1.txt': '1', 'b/2.txt': '2', 'c/3.txt': '3', 'd/4.txt': '4' });
    await bench.engine.snapshot(sources, 'api');
    await fs.writeFile(join(workspace, 'd/4.txt'), 'changed');
    await bothAgree(bench, sources);
    expect(bench.engine.journalState('hello')[0]).toMatchObject({ watching: 0, patched: 0, disabled: 'more than 3 folders' });
    expect(logged.filter((line) => line.includes('no change journal'))).toEqual(['snapshots of hello walk every folder each time (no change journal): more than 3 folders']);
  });

  it('starts afresh when the exclude patterns change, and stops watching when the editor stops', async () => {
    const { bench, workspace, sources } = await setUp();
    await writeFiles(workspace, { 'a.txt': 'one', 'logs/x.log': 'log' });
    await bench.engine.snapshot(sources, 'api');
    const narrower = { ...sources, exclude: ['build/', 'logs/'] };
    const { fromJournal } = await bothAgree(bench, narrower);
    expect(fromJournal.map((entry) => entry.path)).toEqual(['a.txt']);
    expect(bench.engine.journalState('hello')[0]).toMatchObject({ full: 1, patched: 0 });

    await fs.writeFile(join(workspace, 'a.txt'), 'last change');
    const { snapshot } = await bench.engine.snapshot({ ...narrower, watch: false }, 'stop');
    expect((await readIndex(bench.storeDir, 'hello', snapshot.id)).roots[0].entries[0]).toMatchObject({ path: 'a.txt', size: 'last change'.length });
    expect(bench.engine.journalState('hello')).toEqual([]);
  });

  it('walks everything when the root folder was replaced', async () => {
    const { bench, workspace, sources } = await setUp();
    await writeFiles(workspace, { 'a.txt': 'one' });
    await bench.engine.snapshot(sources, 'api');
    await fs.rename(workspace, `${workspace}-old`);
    await writeFiles(workspace, { 'b.txt': content('b', 100) });
    const { fromJournal } = await bothAgree(bench, sources);
    expect(fromJournal.map((entry) => entry.path)).toEqual(['b.txt']);
    expect(bench.engine.journalState('hello')[0]).toMatchObject({ full: 2, patched: 0 });
    await fs.rm(`${workspace}-old`, { recursive: true });
  });
});

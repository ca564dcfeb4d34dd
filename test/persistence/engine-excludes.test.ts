import { promises as fs } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { engineBench, sourcesFor, useTempDirs, workspaceRoot, writeFiles } from './fixtures.ts';

/** Every file below `dir`, as sorted relative paths. */
async function filesBelow(dir: string): Promise<string[]> {
  const found: string[] = [];
  const visit = async (at: string) => {
    for (const entry of await fs.readdir(at, { withFileTypes: true })) {
      if (entry.isDirectory()) await visit(join(at, entry.name));
      else found.push(relative(dir, join(at, entry.name)));
    }
  };
  await visit(dir);
  return found.sort();
}

describe('what a snapshot leaves out', () => {
  const tempDir = useTempDirs();

  async function snapshotAndRestore(files: Record<string, string>, exclude: string[]): Promise<string[]> {
    const bench = await engineBench(tempDir);
    const workspace = await tempDir();
    await writeFiles(workspace, files);
    await bench.engine.snapshot(sourcesFor('hello', workspace, { exclude }), 'api');
    const target = join(await tempDir(), 'restored');
    await (await bench.freshEngine()).restore('hello', { roots: workspaceRoot(target) });
    return filesBelow(target);
  }

  it('leaves out the default rebuildable folders at any depth', async () => {
    const kept = await snapshotAndRestore({
      'src/main.py': '', 'src/__pycache__/main.cpython-312.pyc': '', 'lib/helper.pyc': '',
      'node_modules/left-pad/index.js': '', 'web/node_modules/x/y.js': '', '.venv/bin/python': '',
      '.cache/pip/wheel': '', '.pytest_cache/v/cache': '', 'notebooks/.ipynb_checkpoints/a.ipynb': '',
      'notebooks/a.ipynb': '{}', 'README.md': '# hi',
    }, []);
    expect(kept).toEqual(['README.md', 'notebooks/a.ipynb', 'src/main.py']);
  });

  it('applies the caller\'s gitignore patterns after the defaults: later ones win, ! re-includes', async () => {
    const kept = await snapshotAndRestore({
      'app.log': '', 'logs/today.log': '', 'important.log': '', 'build/out.js': '', 'src/build/keep.ts': '',
      'top-only.txt': '', 'sub/top-only.txt': '', 'data/big.csv': '', 'data/small.csv': '', 'src/main.ts': '',
    }, ['*.log', '!important.log', '/build/', '/top-only.txt', 'data/*.csv', '!data/small.csv']);
    expect(kept).toEqual(['important.log', 'data/small.csv', 'src/build/keep.ts', 'src/main.ts', 'sub/top-only.txt'].sort());
  });

  it('keeps a default folder the caller re-includes with !', async () => {
    const kept = await snapshotAndRestore({ '.cache/keep/me.txt': '', 'node_modules/gone.js': '', 'a.txt': '' }, ['!.cache/']);
    expect(kept).toEqual(['.cache/keep/me.txt', 'a.txt']);
  });

  it('matches case-sensitively, as git does on Linux', async () => {
    const kept = await snapshotAndRestore({ 'Node_Modules/x.js': '', 'BUILD/y': '', 'build/z': '' }, ['build/']);
    expect(kept).toEqual(['BUILD/y', 'Node_Modules/x.js']);
  });
});

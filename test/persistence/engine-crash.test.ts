import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { eventually } from '../helpers/wait.ts';
import { content, describeTree, engineBench, sourcesFor, useTempDirs, workspaceRoot, writeFiles } from './fixtures.ts';

const NODE = new URL('../../node_modules/.bin/node', import.meta.url).pathname;
const CHILD = new URL('./snapshot-child.ts', import.meta.url).pathname;

describe('a snapshot cut short', () => {
  const tempDir = useTempDirs();

  it('by kill -9 in the middle leaves the previous complete snapshot current', async () => {
    const bench = await engineBench(tempDir, { packBytes: 64 * 1024 });
    const workspace = await tempDir();
    const version = (v: string) => Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`d${i % 6}/f${i}.bin`, content(`${v} ${i}`, 4096)]));
    await writeFiles(workspace, version('one'));
    const first = await bench.engine.snapshot(sourcesFor('hello', workspace), 'stop');
    const before = await describeTree(workspace);
    const committedObjects = (await fs.readdir(join(bench.storeDir, 'objects'))).length;

    await writeFiles(workspace, version('two'));
    const child = spawn(NODE, [CHILD, bench.storeDir, join(await tempDir(), 'cache'), workspace, '5'], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve(signal ?? code)));
    try {
      await eventually(() => out.includes('paused') || out.includes('done'), 20_000);
      expect(out).toBe('paused\n');
      // Five packs of the new version were written before it stopped dead.
      expect((await fs.readdir(join(bench.storeDir, 'objects'))).length).toBe(committedObjects + 5);
      child.kill('SIGKILL');
      expect(await exited).toBe('SIGKILL');
    } finally {
      child.kill('SIGKILL');
    }

    const fresh = await bench.freshEngine();
    expect((await fresh.list('hello')).map((info) => info.id)).toEqual([first.snapshot.id]);
    const target = join(await tempDir(), 'restored');
    const result = await fresh.restore('hello', { roots: workspaceRoot(target) });
    expect(result.snapshot.id).toBe(first.snapshot.id);
    expect(result.corrupted).toEqual([]);
    expect(await describeTree(target)).toEqual(before);

    // The next snapshot completes over the leftovers, and restores the second version.
    const second = await bench.engine.snapshot(sourcesFor('hello', workspace), 'stop');
    const again = join(await tempDir(), 'again');
    await fresh.restore('hello', { roots: workspaceRoot(again) });
    expect((await fresh.list('hello'))[0].id).toBe(second.snapshot.id);
    expect(await describeTree(again)).toEqual(await describeTree(workspace));
  });

  it('by the shutdown deadline (its signal aborted) leaves the previous complete snapshot current', async () => {
    const bench = await engineBench(tempDir, { packBytes: 16 * 1024 });
    const workspace = await tempDir();
    const version = (v: string) => Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`f${i}.bin`, content(`${v} ${i}`, 4096)]));
    await writeFiles(workspace, version('one'));
    const first = await bench.engine.snapshot(sourcesFor('hello', workspace), 'stop');
    const before = await describeTree(workspace);

    await writeFiles(workspace, version('two'));
    const deadline = new AbortController();
    let puts = 0;
    bench.store.beforePut = () => {
      if (++puts === 2) deadline.abort(new Error('the shutdown deadline passed'));
    };
    await expect(bench.engine.snapshot(sourcesFor('hello', workspace), 'shutdown', deadline.signal)).rejects.toThrow('the shutdown deadline passed');
    bench.store.beforePut = undefined;

    const fresh = await bench.freshEngine();
    expect((await fresh.list('hello')).map((info) => info.id)).toEqual([first.snapshot.id]);
    const target = join(await tempDir(), 'restored');
    await fresh.restore('hello', { roots: workspaceRoot(target) });
    expect(await describeTree(target)).toEqual(before);
    // The engine goes on: the next snapshot takes the second version.
    expect((await bench.engine.snapshot(sourcesFor('hello', workspace), 'stop')).unchanged).toBe(false);
  });
});

// Extracting ZIP workspace sources: real archives built here, hostile ones included; nothing may
// be written outside the workspace, and a failed extraction leaves it empty.
import { existsSync, promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { extractInto, planArchive } from '../../src/workspace/archive-source.ts';
import { buildZip, type ZipEntrySpec } from './zip-fixtures.ts';

let root: string;
let workspace: string;
beforeEach(async () => {
  root = await fs.mkdtemp(join(tmpdir(), 'devbox-zip-'));
  workspace = join(root, 'workspaces', 'w');
  await fs.mkdir(workspace, { recursive: true });
});
afterEach(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

async function extract(entries: ZipEntrySpec[]) {
  const zip = join(root, 'upload.zip');
  await fs.writeFile(zip, buildZip(entries));
  return extractInto(workspace, zip, new AbortController().signal);
}

describe('extractInto', () => {
  it('flattens a single top-level folder and gives owner-only modes', async () => {
    await extract([
      { name: 'project/README.md', data: '# hi\n', mode: 0o100644 },
      { name: 'project/bin/run.sh', data: '#!/bin/sh\n', mode: 0o100755 },
    ]);
    expect(await fs.readdir(workspace)).toEqual(['README.md', 'bin']);
    expect(await fs.readFile(join(workspace, 'README.md'), 'utf8')).toBe('# hi\n');
    expect((await fs.stat(join(workspace, 'README.md'))).mode & 0o777).toBe(0o600);
    expect((await fs.stat(join(workspace, 'bin', 'run.sh'))).mode & 0o777).toBe(0o700);
    expect((await fs.stat(join(workspace, 'bin'))).mode & 0o077).toBe(0);
  });

  it('keeps several top-level entries as they are', async () => {
    await extract([{ name: 'a.txt', data: 'a' }, { name: 'src/b.txt', data: 'b' }]);
    expect((await fs.readdir(workspace)).sort()).toEqual(['a.txt', 'src']);
  });

  it.each([
    ['a .. entry (zip slip)', [{ name: 'ok.txt', data: 'x' }, { name: 'AA/escaped.txt', rawName: '../escaped.txt', data: 'x' }], /climbs out with "\.\."/],
    ['an absolute path', [{ name: 'Xtmp/abs.txt', rawName: '/tmp/abs.txt', data: 'x' }], /absolute path/],
    ['a symbolic link', [{ name: 'link', data: '/etc', mode: 0o120777 }], /symbolic link/],
    ['a symlink then a write through it', [{ name: 'link', data: '..', mode: 0o120777 }, { name: 'link/evil.txt', data: 'x' }], /symbolic link/],
    ['a device file', [{ name: 'dev', data: '', mode: 0o020644 }], /character device/],
    ['a FIFO', [{ name: 'fifo', data: '', mode: 0o010644 }], /FIFO/],
    ['a backslash path', [{ name: 'AAAbad.txt', rawName: '..\\bad.txt', data: 'x' }], /backslash/],
  ])('refuses %s and writes nothing', async (_what, entries, problem) => {
    await expect(extract(entries as ZipEntrySpec[])).rejects.toThrow(problem);
    expect(await fs.readdir(workspace)).toEqual([]);
    expect(existsSync(join(root, 'workspaces', 'escaped.txt'))).toBe(false);
    expect((await fs.readdir(join(root, 'workspaces'))).sort()).toEqual(['w']);
  });

  it('refuses a ZIP bomb by its compression ratio before unpacking it', async () => {
    const zip = join(root, 'bomb.zip');
    await fs.writeFile(zip, buildZip([{ name: 'zeros.bin', data: Buffer.alloc(50 * 1024 * 1024) }]));
    expect((await fs.stat(zip)).size).toBeLessThan(1024 * 1024);
    expect(() => planArchive(zip)).toThrow(/unpacks \d+ times larger than it is packed, over 100 \(a ZIP bomb\?\)/);
    await expect(extractInto(workspace, zip, new AbortController().signal)).rejects.toThrow(/ZIP bomb/);
    expect(await fs.readdir(workspace)).toEqual([]);
  });

  it('refuses too many entries, too many bytes, and a file that is no ZIP', async () => {
    const zip = join(root, 'many.zip');
    await fs.writeFile(zip, buildZip(Array.from({ length: 30 }, (_, i) => ({ name: `f${i}.txt`, data: 'x'.repeat(100) }))));
    expect(() => planArchive(zip, { maxEntries: 20, maxTotalBytes: 1e9, maxRatio: 100 })).toThrow(/30 entries, more than 20/);
    expect(() => planArchive(zip, { maxEntries: 100, maxTotalBytes: 1000, maxRatio: 100 })).toThrow(/unpacks to more than/);
    await fs.writeFile(zip, 'not a zip at all');
    expect(() => planArchive(zip)).toThrow(/not a readable ZIP file/);
  });
});

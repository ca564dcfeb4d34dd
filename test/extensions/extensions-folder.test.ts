// What an extensions folder holds, and which DEVBOX_VSIX_DIR file stands for an id.
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { findVsix, installedExtensions } from '../../src/extensions/extensions-folder.ts';

let dir: string;
beforeEach(async () => {
  dir = await fs.mkdtemp(join(tmpdir(), 'devbox-extfolder-'));
});
afterEach(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

it('picks the pinned version, else the highest, else publisher.name.vsix; ids are case-insensitive', async () => {
  for (const file of ['Acme.Tool-1.9.0.vsix', 'acme.tool-1.10.0.vsix', 'acme.other.vsix', 'acme.tool-notes.txt']) await fs.writeFile(join(dir, file), '');
  expect(await findVsix(dir, 'acme.tool')).toBe(join(dir, 'acme.tool-1.10.0.vsix'));
  expect(await findVsix(dir, 'ACME.tool@1.9.0')).toBe(join(dir, 'Acme.Tool-1.9.0.vsix'));
  expect(await findVsix(dir, 'acme.tool@2.0.0')).toBeUndefined();
  expect(await findVsix(dir, 'acme.other')).toBe(join(dir, 'acme.other.vsix'));
  expect(await findVsix(join(dir, 'missing'), 'acme.tool')).toBeUndefined();
});

it("reads code-server's extensions.json, else the publisher.name-version folders that hold a package.json", async () => {
  await fs.mkdir(join(dir, 'acme.tool-1.0.0'));
  await fs.writeFile(join(dir, 'acme.tool-1.0.0', 'package.json'), '{}');
  await fs.mkdir(join(dir, 'acme.empty-1.0.0'));
  expect(await installedExtensions(dir)).toEqual(new Map([['acme.tool', '1.0.0']]));
  // An uninstalled extension's folder stays until the editor cleans up; the list is what counts.
  await fs.writeFile(join(dir, 'extensions.json'), JSON.stringify([{ identifier: { id: 'Acme.Kept' }, version: '2.0.0' }]));
  expect(await installedExtensions(dir)).toEqual(new Map([['acme.kept', '2.0.0']]));
  expect(await installedExtensions(join(dir, 'missing'))).toEqual(new Map());
});

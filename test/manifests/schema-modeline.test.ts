// Manifests name their schema on their first line, so VS Code's YAML extension (yaml-language-server)
// offers completion and validation; the API's later edits keep that line and the operator's comments.
import { promises as fs } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManifestStore, parseManifest } from '../../src/manifests/store.ts';

const PROJECT = resolve(import.meta.dirname, '../..');
const SCHEMA = join(PROJECT, 'schemas/editorserver.schema.json');
const MODELINE = /^# yaml-language-server: \$schema=(\S+)\n/;

/** The file the line names, as yaml-language-server finds it: a relative path from the manifest's folder. */
async function schemaNamedBy(file: string, text: string): Promise<string> {
  const reference = MODELINE.exec(text)?.[1];
  expect(reference, `${file} starts with a yaml-language-server line`).toBeDefined();
  return fs.realpath(isAbsolute(reference!) ? reference! : resolve(dirname(file), reference!));
}

let dir: string;
let store: ManifestStore;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'devbox-modeline-'));
  store = new ManifestStore(dir, `${dir}-status`);
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
  await rm(`${dir}-status`, { recursive: true, force: true });
});

describe('the yaml-language-server line', () => {
  it('starts every manifest the API creates, naming the installed schema by its absolute path', async () => {
    await store.create({ apiVersion: 'devbox.dev/v1alpha1', kind: 'EditorServer', metadata: { name: 'made' }, spec: { displayName: 'Made', running: false } });
    const text = await readFile(join(dir, 'made.yaml'), 'utf8');
    // Right in any manifests folder (DEVBOX_MANIFESTS_DIR), not only one beside the project.
    expect(MODELINE.exec(text)?.[1]).toBe(SCHEMA);
    expect(await schemaNamedBy(join(dir, 'made.yaml'), text)).toBe(await fs.realpath(SCHEMA));
    expect((await store.read('made')).kind).toBe('ok');
  });

  it('and an operator\'s comments stay through the API\'s later edits of spec', async () => {
    await store.create({ apiVersion: 'devbox.dev/v1alpha1', kind: 'EditorServer', metadata: { name: 'kept' }, spec: { displayName: 'Kept', running: false } });
    const file = join(dir, 'kept.yaml');
    const written = await readFile(file, 'utf8');
    const [modeline, ...rest] = written.split('\n');
    await writeFile(file, [modeline, '# Ana\'s editor: ask her before stopping it.', ...rest.map((l) => (l === '  running: false' ? '  running: false   # off at night' : l)), '# end'].join('\n'));

    expect(await store.update('kept', (doc) => {
      doc.setIn(['spec', 'running'], true);
      doc.setIn(['spec', 'extensions'], ['redhat.vscode-yaml']);
      doc.setIn(['spec', 'settings'], { 'editor.fontSize': 14 });
    })).toBe('updated');

    const text = await readFile(file, 'utf8');
    expect(text.split('\n')[0]).toBe(modeline);
    expect(text.split('\n')[1]).toBe('# Ana\'s editor: ask her before stopping it.');
    expect(text).toMatch(/running: true +# off at night/);
    expect(text).toContain('# end');
    const read = await store.read('kept');
    expect(read.kind === 'ok' && read.server.spec).toMatchObject({ running: true, extensions: ['redhat.vscode-yaml'], settings: { 'editor.fontSize': 14 } });
  });

  it('starts every example, naming the schema by a path right in examples/, and by ../schemas/ once copied into the manifests folder', async () => {
    const examples = join(PROJECT, 'manifests/examples');
    const files = (await fs.readdir(examples)).filter((f) => f.endsWith('.yaml'));
    expect(files.length).toBeGreaterThan(0);
    for (const name of files) {
      const text = await readFile(join(examples, name), 'utf8');
      expect(await schemaNamedBy(join(examples, name), text), name).toBe(await fs.realpath(SCHEMA));
      // After `cp manifests/examples/<name> manifests/` and the one-line edit of the path docs/manifests.md describes.
      const copied = text.replace('$schema=../../schemas/', '$schema=../schemas/');
      expect(copied, name).not.toBe(text);
      expect(await schemaNamedBy(join(PROJECT, 'manifests', name), copied), name).toBe(await fs.realpath(SCHEMA));
      expect(parseManifest(name.slice(0, -'.yaml'.length), text).kind, name).toBe('ok');
    }
  });
});

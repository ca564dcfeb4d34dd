// The manifest store: atomic exclusive create, hand edits never lost, and files that do not parse
// or validate reported, never thrown. Status records: status-record.test.ts; the write's
// every step: spec-writes.test.ts.
import { execFileSync } from 'node:child_process';
import { promises as fsp, writeFileSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { parse } from 'yaml';
import { ConflictError, ManifestStore, MAX_MANIFEST_BYTES } from '../../src/manifests/store.ts';
import type { EditorServer } from '../../src/manifests/types.ts';

const UID = '5f0c2b1e-3d4a-4b5c-8d6e-7f8091a2b3c4';

/** A manifest as a person types it: comments, odd spacing, quoted strings, flow collections. */
const HAND_WRITTEN = `# The data team's editor. Ask in #data before changing the port.
apiVersion: devbox.dev/v1alpha1
kind:   EditorServer
metadata:
  name: data-pipeline        # must match the file name
  annotations: { "owner": 'ana' }
spec:
    displayName: "Data  pipeline: main"   # quoted, with a colon
    running:    false
    settings:
        "editor.fontSize": 14
        'files.exclude': { "**/.git": true }

    # extensions come later
    extensions: [ ms-python.python ]
# end of spec
`;

function server(name: string, displayName = name): EditorServer {
  return {
    apiVersion: 'devbox.dev/v1alpha1',
    kind: 'EditorServer',
    metadata: { name },
    spec: { displayName, running: false },
  };
}

// Captured before any spy replaces it.
const realOpen = fsp.open;

let dir: string;
let store: ManifestStore;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'devbox-store-'));
  store = new ManifestStore(dir, `${dir}-status`);
});

afterEach(async () => {
  vi.restoreAllMocks();
  await rm(dir, { recursive: true, force: true });
  await rm(`${dir}-status`, { recursive: true, force: true });
});

const fileOf = (name: string) => join(dir, `${name}.yaml`);
const readText = (name: string) => readFile(fileOf(name), 'utf8');
const leftovers = async () => (await readdir(dir)).filter((f) => f.startsWith('.'));

describe('create', () => {
  it('creates a manifest that reads back as written', async () => {
    expect(await store.create(server('alpha', 'Alpha'))).toBe(true);
    const read = await store.read('alpha');
    expect(read.kind).toBe('ok');
    expect(read.kind === 'ok' && read.server.spec.displayName).toBe('Alpha');
  });

  it('lets exactly one of two simultaneous creates of one name win, and keeps the winner intact', async () => {
    const results = await Promise.all([store.create(server('twin', 'First')), store.create(server('twin', 'Second'))]);
    expect(results.filter(Boolean)).toHaveLength(1);
    const winner = results[0] ? 'First' : 'Second';
    expect(parse(await readText('twin')).spec.displayName).toBe(winner);
    expect(await leftovers()).toEqual([]);
  });

  it('refuses a name that is already taken and leaves the existing file alone', async () => {
    await writeFile(fileOf('taken'), HAND_WRITTEN.replace('data-pipeline', 'taken'));
    expect(await store.create(server('taken', 'Other'))).toBe(false);
    expect(await readText('taken')).toBe(HAND_WRITTEN.replace('data-pipeline', 'taken'));
  });
});

describe('update', () => {
  beforeEach(async () => {
    await writeFile(fileOf('data-pipeline'), HAND_WRITTEN);
  });

  it('changes the spec through the document, so comments stay', async () => {
    const result = await store.update('data-pipeline', (doc) => {
      doc.setIn(['spec', 'running'], true);
    });
    expect(result).toBe('updated');
    const text = await readText('data-pipeline');
    expect(text).toContain('# The data team\'s editor. Ask in #data before changing the port.');
    expect(text).toContain('# must match the file name');
    expect(text).toContain('# extensions come later');
    expect(parse(text).spec.running).toBe(true);
  });

  it('answers unchanged when the mutation declines', async () => {
    expect(await store.update('data-pipeline', () => false)).toBe('unchanged');
    expect(await readText('data-pipeline')).toBe(HAND_WRITTEN);
  });

  it('keeps a hand edit that lands behind its back and applies its own change on the retry', async () => {
    let calls = 0;
    const result = await store.update('data-pipeline', (doc) => {
      // Someone saves the file in an editor between the store's read and its rename.
      if (calls++ === 0) writeFileSync(fileOf('data-pipeline'), HAND_WRITTEN.replace('"Data  pipeline: main"', '"Renamed by hand"'));
      doc.setIn(['spec', 'running'], true);
    });
    expect(result).toBe('updated');
    expect(calls).toBe(2);
    const read = await store.read('data-pipeline');
    expect(read.kind === 'ok' && read.server.spec.displayName).toBe('Renamed by hand');
    expect(read.kind === 'ok' && read.server.spec.running).toBe(true);
  });

  it('gives up with a ConflictError when the file keeps changing, and keeps the last hand edit', async () => {
    let edits = 0;
    const handEdit = () => HAND_WRITTEN.replace('"Data  pipeline: main"', `"Edit ${edits}"`);
    vi.spyOn(fsp, 'open').mockImplementation(async (...args: Parameters<typeof fsp.open>) => {
      if (String(args[0]).endsWith('.tmp')) {
        edits++;
        await writeFile(fileOf('data-pipeline'), handEdit());
      }
      return realOpen(...args);
    });
    await expect(store.update('data-pipeline', (doc) => {
      doc.setIn(['spec', 'running'], true);
    })).rejects.toBeInstanceOf(ConflictError);
    expect(await readText('data-pipeline')).toBe(handEdit());
    expect(await readdir(dir)).toEqual(['data-pipeline.yaml']);
  });
});

describe('read', () => {
  async function readFrom(file: string, text: string) {
    await writeFile(join(dir, `${file}.yaml`), text);
    return store.read(file);
  }

  it('reports a file that is not YAML as invalid, with the parser\'s message and where it is', async () => {
    const read = await readFrom('broken', 'apiVersion: devbox.dev/v1alpha1\nspec: [unclosed\n');
    expect(read.kind).toBe('invalid');
    const errors = read.kind === 'invalid' ? read.errors : [];
    expect(errors.length).toBeGreaterThan(0);
    for (const error of errors) expect(error).toMatch(new RegExp(`^${fileOf('broken')}:[23]:\\d+: \\S`));
    expect(errors.join('\n')).toMatch(/flow sequence/i);
  });

  it('refuses a file that holds two YAML documents', async () => {
    const one = HAND_WRITTEN.replaceAll('data-pipeline', 'double');
    const read = await readFrom('double', `${one}---\n${one}`);
    // Placed at the second document's start.
    expect(read.kind === 'invalid' && read.errors).toEqual([`${fileOf('double')}:17:1: the file holds 2 YAML documents: keep exactly one`]);
  });

  it('lists every schema error, each naming the field to change and the line and column it is at', async () => {
    const read = await readFrom('wrong', [
      'apiVersion: devbox.dev/v1alpha1',
      'kind: Editor',
      'metadata:',
      '  name: wrong',
      'spec:',
      '  running: "yes"',
      '  port: 80',
      '  colour: red',
      '  restartPolicy: Sometimes',
      '',
    ].join('\n'));
    expect(read.kind).toBe('invalid');
    const errors = read.kind === 'invalid' ? read.errors : [];
    const at = fileOf('wrong');
    expect(errors).toEqual(expect.arrayContaining([
      `${at}:2:7: kind: must be "EditorServer"`,
      `${at}:8:3: spec: unknown field "colour"`,
      `${at}:6:12: spec.running: must be boolean`,
      `${at}:7:9: spec.port: must be >= 1024`,
      `${at}:9:18: spec.restartPolicy: must be equal to one of the allowed values (Never, OnFailure, Always)`,
    ]));
    expect(errors).toHaveLength(5);
  });

  it('refuses a manifest whose metadata.name is not its file name', async () => {
    const read = await readFrom('other-name', HAND_WRITTEN);
    expect(read.kind === 'invalid' && read.errors).toEqual([`${fileOf('other-name')}:5:9: metadata.name: "data-pipeline" must equal the file name "other-name"`]);
  });

  it('reports an empty file and an alias bomb as invalid instead of throwing', async () => {
    expect((await readFrom('empty', '')).kind).toBe('invalid');
    const bomb = [
      'apiVersion: devbox.dev/v1alpha1', 'kind: EditorServer', 'metadata:', '  name: bomb', 'spec:', '  running: false', '  settings:',
      '    a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]',
      '    b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]',
      '    c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]',
      '    d: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]',
      '',
    ].join('\n');
    const read = await readFrom('bomb', bomb);
    expect(read.kind).toBe('invalid');
    expect(read.kind === 'invalid' && read.errors[0]).toMatch(/alias/i);
  });

  it('reports entries that are not regular files without following or blocking on them', async () => {
    const outside = await mkdtemp(join(tmpdir(), 'devbox-outside-'));
    try {
      await writeFile(join(outside, 'secret'), 'metadata: { name: TOPSECRET }\n');
      execFileSync('mkfifo', [join(outside, 'pipe')]);
      execFileSync('mkfifo', [fileOf('fifo')]);
      await fsp.symlink(join(outside, 'secret'), fileOf('secret'));
      await fsp.symlink(join(outside, 'pipe'), fileOf('pipe'));
      await fsp.mkdir(fileOf('folder'));
      const cases: Record<string, RegExp> = {
        fifo: /fifo\.yaml is a FIFO \(named pipe\): a manifest must be a regular file/,
        secret: /secret\.yaml is a symbolic link, which is never followed/,
        pipe: /pipe\.yaml is a symbolic link, which is never followed/,
        folder: /folder\.yaml is a folder: a manifest must be a regular file/,
      };
      for (const [name, pattern] of Object.entries(cases)) {
        const read = await store.read(name);
        expect(read.kind, name).toBe('invalid');
        expect((read as { errors: string[] }).errors.join('\n')).toMatch(pattern);
        expect(JSON.stringify(read)).not.toContain('TOPSECRET');
      }
      // Writes refuse them too, and change nothing.
      expect(await store.writeStatus('fifo', { phase: 'Stopped' }, UID)).toBe('invalid');
      expect(await store.update('secret', () => undefined)).toBe('invalid');
      expect(await readFile(join(outside, 'secret'), 'utf8')).toContain('TOPSECRET');
    } finally {
      await rm(outside, { recursive: true, force: true });
    }
  });

  it('reads at most 256 KiB: a larger file is reported with its size, never parsed', async () => {
    await writeFile(fileOf('data-pipeline'), HAND_WRITTEN + `# ${'x'.repeat(MAX_MANIFEST_BYTES)}\n`);
    const read = await store.read('data-pipeline');
    expect(read.kind).toBe('invalid');
    expect((read as { errors: string[] }).errors[0]).toMatch(/data-pipeline\.yaml is larger than 256 KiB \(\d+ KiB\): a manifest may be at most 256 KiB/);
    // Just under the limit, it is read and parsed.
    await writeFile(fileOf('data-pipeline'), HAND_WRITTEN + `# ${'x'.repeat(MAX_MANIFEST_BYTES - HAND_WRITTEN.length - 10)}\n`);
    expect((await store.read('data-pipeline')).kind).toBe('ok');
  });

  it('reports a file that is not there as missing', async () => {
    expect(await store.read('ghost')).toEqual({ kind: 'missing', name: 'ghost' });
  });
});

describe('list, remove and isOwnWrite', () => {
  it('lists every *.yaml entry, whatever its kind, and no hidden, temporary or other names', async () => {
    await store.create(server('beta'));
    await store.create(server('alpha'));
    await writeFile(join(dir, '.hidden.yaml'), HAND_WRITTEN);
    await writeFile(join(dir, '.alpha.yaml.1a2b3c4d.tmp'), HAND_WRITTEN);
    await writeFile(join(dir, 'README.md'), '# manifests\n');
    await writeFile(join(dir, 'gamma.yml'), HAND_WRITTEN);
    await fsp.mkdir(join(dir, 'examples'));
    // Not manifests, but listed so that reading them reports why.
    await fsp.mkdir(join(dir, 'folder.yaml'));
    await fsp.symlink(join(dir, 'alpha.yaml'), join(dir, 'link.yaml'));
    expect(await store.list()).toEqual(['alpha', 'beta', 'folder', 'link']);
  });

  it('lists nothing when the folder does not exist yet', async () => {
    expect(await new ManifestStore(join(dir, 'not-yet')).list()).toEqual([]);
  });

  it('removes a manifest once', async () => {
    await store.create(server('gone'));
    expect(await store.remove('gone')).toBe(true);
    expect(await store.remove('gone')).toBe(false);
    expect(await store.list()).toEqual([]);
  });

  it('recognises its own writes, and not a hand edit or a removed file', async () => {
    await store.create(server('mine'));
    expect(store.isOwnWrite('mine', await readText('mine'))).toBe(true);

    await store.update('mine', (doc) => void doc.setIn(['spec', 'port'], 8010));
    const own = await readText('mine');
    expect(store.isOwnWrite('mine', own)).toBe(true);

    const edited = own.replace('running: false', 'running: true');
    await writeFile(fileOf('mine'), edited);
    expect(store.isOwnWrite('mine', edited)).toBe(false);
    // The edit undone by hand restores our text byte for byte: that is the operator's write now.
    await writeFile(fileOf('mine'), own);
    expect(store.isOwnWrite('mine', own)).toBe(false);

    await store.remove('mine');
    expect(store.isOwnWrite('mine', own)).toBe(false);
  });
});

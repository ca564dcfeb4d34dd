// Status lives in the controller's own record, not in the manifest: the manifest file is the
// operator's and the API's, generation counts spec changes whoever made them, and an inline
// status from before is taken over once.
import { promises as fsp, type PathLike } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { parse } from 'yaml';
import { recordYaml } from '../../src/manifests/status-file.ts';
import { ManifestStore } from '../../src/manifests/store.ts';
import type { EditorServerStatus } from '../../src/manifests/types.ts';

const HAND_WRITTEN = `# The data team's editor. Ask in #data before changing the port.
apiVersion: devbox.dev/v1alpha1
kind:   EditorServer
metadata:
  name: data-pipeline        # must match the file name
spec:
    displayName: "Data  pipeline: main"
    running:    false
    extensions: [ ms-python.python ]
`;

const realOpen = fsp.open;

let root: string;
let dir: string;
let statusDir: string;
let store: ManifestStore;
const file = () => join(dir, 'data-pipeline.yaml');

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'devbox-status-'));
  dir = join(root, 'manifests');
  statusDir = join(root, 'data', 'status');
  await fsp.mkdir(dir);
  store = new ManifestStore(dir, statusDir);
  await writeFile(file(), HAND_WRITTEN);
});

afterEach(async () => {
  vi.restoreAllMocks();
  await rm(root, { recursive: true, force: true });
});

async function readServer() {
  const read = await store.read('data-pipeline');
  if (read.kind !== 'ok') throw new Error(`expected a valid manifest, got ${JSON.stringify(read)}`);
  return read.server;
}

describe('status records', () => {
  it('keeps status out of the manifest: the file stays byte for byte as the operator wrote it', async () => {
    expect(await store.writeStatus('data-pipeline', { phase: 'Stopped', port: 8010 })).toBe('updated');
    const second: EditorServerStatus = { phase: 'Running', port: 8010, runtimeRef: { kind: 'process', pid: 4242, startTicks: 7 }, startTime: '2026-11-22T06:00:01Z' };
    expect(await store.writeStatus('data-pipeline', second)).toBe('updated');
    expect(await store.writeStatus('data-pipeline', structuredClone(second))).toBe('unchanged');

    expect(await readFile(file(), 'utf8')).toBe(HAND_WRITTEN);
    expect((await readServer()).status).toEqual(second);
    const record = parse(await readFile(join(statusDir, 'data-pipeline.yaml'), 'utf8'));
    expect(record).toMatchObject({ generation: 1, status: second });
    expect(await readdir(dir)).toEqual(['data-pipeline.yaml']);
  });

  it('never loses the operator\'s text when they rewrite the spec while status is being written', async () => {
    const edited = HAND_WRITTEN.replace('running:    false', 'running:    true   # on by hand');
    // The operator saves at every file the status write opens (its temporary file included).
    vi.spyOn(fsp, 'open').mockImplementation(async (...args: Parameters<typeof fsp.open>) => {
      if (String(args[0]).endsWith('.tmp')) await writeFile(file(), edited);
      return realOpen(...args);
    });
    expect(await store.writeStatus('data-pipeline', { phase: 'Stopped' })).toBe('updated');
    expect(await readFile(file(), 'utf8')).toBe(edited);
  });

  it('never writes the manifest, not even its directory entry, for a status or a uid', async () => {
    const before = await fsp.stat(file());
    const renames: string[] = [];
    const realRename = fsp.rename;
    vi.spyOn(fsp, 'rename').mockImplementation(async (from: PathLike, to: PathLike) => {
      renames.push(String(to));
      return realRename(from, to);
    });
    await store.writeStatus('data-pipeline', { phase: 'Pending' }, '5f0c2b1e-3d4a-4b5c-8d6e-7f8091a2b3c4');
    expect(renames.filter((to) => to.startsWith(dir))).toEqual([]);
    expect((await fsp.stat(file())).ino).toBe(before.ino);
    expect(await readFile(file(), 'utf8')).toBe(HAND_WRITTEN);
  });

  it('moves metadata.generation on every spec change, whoever made it, and not on comments or formatting', async () => {
    expect((await readServer()).metadata.generation).toBe(1);
    expect((await readServer()).metadata.generation).toBe(1);

    await writeFile(file(), HAND_WRITTEN.replace('running:    false', 'running: true')); // a hand edit
    expect((await readServer()).metadata.generation).toBe(2);

    await store.update('data-pipeline', (doc) => void doc.setIn(['spec', 'port'], 8012)); // the API
    expect((await readServer()).metadata.generation).toBe(3);

    // Only comments and layout: the spec is the same.
    const reformatted = (await readFile(file(), 'utf8')).replace('# must match the file name', '# renamed comment') + '# trailing note\n';
    await writeFile(file(), reformatted);
    expect((await readServer()).metadata.generation).toBe(3);
    // Status writes keep it.
    await store.writeStatus('data-pipeline', { phase: 'Stopped' });
    expect((await readServer()).metadata.generation).toBe(3);
  });

  it('takes over an inline status once, and ignores it (and any pid in it) after that', async () => {
    const inline = `${HAND_WRITTEN}status:\n  phase: Running\n  port: 8010\n  pid: 4242\n  pidStartTicks: 99\n`;
    await writeFile(file(), inline);
    // An older version's pid and start time become the runtime's reference.
    expect((await readServer()).status).toEqual({ phase: 'Running', port: 8010, runtimeRef: { kind: 'process', pid: 4242, startTicks: 99 } });

    await store.writeStatus('data-pipeline', { phase: 'Stopped', port: 8010, runtimeRef: null });
    // A later edit of the stale block (or a copy of another file's) changes nothing.
    await writeFile(file(), inline.replace('pid: 4242', 'pid: 1'));
    expect((await readServer()).status).toEqual({ phase: 'Stopped', port: 8010, runtimeRef: null });
    expect(await readFile(file(), 'utf8')).toBe(inline.replace('pid: 4242', 'pid: 1'));
  });

  it('takes over a status record written with a pid by an older version: the next write has only the runtime reference', async () => {
    await writeFile(file(), HAND_WRITTEN);
    await readServer();
    // The first status commit writes the record (first sight alone writes nothing).
    await store.writeStatus('data-pipeline', { phase: 'Stopped' });
    const record = join(statusDir, 'data-pipeline.yaml');
    // An older version wrote its records in YAML's block style, with a pid.
    const { generation, specHash } = parse(await readFile(record, 'utf8'));
    const old = `generation: ${generation}\nspecHash: ${specHash}\nstatus:\n  phase: Running\n  port: 8010\n  pid: 4242\n  pidStartTicks: 99\n`;
    await writeFile(record, old);
    // Records are read once by a running store (only it writes them): the older version's record is met at a start.
    const restarted = () => (store = new ManifestStore(dir, statusDir));
    restarted();
    const ref = { kind: 'process', pid: 4242, startTicks: 99 };
    expect((await readServer()).status).toEqual({ phase: 'Running', port: 8010, runtimeRef: ref });
    expect(await store.writeStatus('data-pipeline', { phase: 'Running', port: 8010, runtimeRef: ref, message: 'seen' })).toBe('updated');
    const written = parse(await readFile(record, 'utf8')).status;
    expect(written).toEqual({ phase: 'Running', port: 8010, runtimeRef: ref, message: 'seen' });
    // A reference that is not plain data of a runtime is dropped, never passed on.
    await writeFile(record, old.replace(/  pid: 4242\n  pidStartTicks: 99\n/, '  runtimeRef: { pid: [1, 2] }\n'));
    restarted();
    expect((await readServer()).status).toEqual({ phase: 'Running', port: 8010 });
  });

  it('records nothing for a manifest that is missing or invalid, and forgets the record on remove', async () => {
    expect(await store.writeStatus('nobody', { phase: 'Stopped' })).toBe('missing');
    const broken = HAND_WRITTEN.replace('running:    false', 'running:    maybe');
    await writeFile(file(), broken);
    expect(await store.writeStatus('data-pipeline', { phase: 'Stopped' })).toBe('invalid');
    expect(await readdir(statusDir).catch(() => [])).toEqual([]);

    await writeFile(file(), HAND_WRITTEN);
    await store.writeStatus('data-pipeline', { phase: 'Stopped' });
    expect(await readdir(statusDir)).toEqual(['data-pipeline.yaml']);
    expect(await store.remove('data-pipeline')).toBe(true);
    expect(await readdir(statusDir)).toEqual([]);
  });

  it('records nothing once the manifest read at the start of a reconcile turned invalid or went', async () => {
    await readServer();
    await writeFile(file(), HAND_WRITTEN.replace('running:    false', 'running:    maybe'));
    expect(await store.writeStatus('data-pipeline', { phase: 'Stopped' })).toBe('invalid');
    await writeFile(file(), HAND_WRITTEN);
    await readServer();
    await rm(file());
    expect(await store.writeStatus('data-pipeline', { phase: 'Stopped' })).toBe('missing');
    expect(await readdir(statusDir).catch(() => [])).toEqual([]);
  });

  it('writes records that any YAML reader reads back as they were, whatever their strings hold', () => {
    const strings = ['Stopped', '', 'true', 'False', 'null', '~', '0x1f', '1e3', '-', '- x', 'a: b', 'a #b', '#x', ' lead', 'trail ', 'two  spaces',
      '/data/workspaces/seat-1', 'it\'s "quoted"', 'line\nbreak', 'tab\there', '[x]', '{x}', '*ref', '&anchor', '!tag', '%d', '@at', '`tick`', 'é ünïcödé', '\u0000', '2026-11-29T07:44:00Z', '5f0c8e1a-0000-4000-8000-000000000000'];
    let seed = 7;
    const random = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    const value = (depth: number): unknown => {
      switch (random(depth > 2 ? 4 : 6)) {
        case 0: return strings[random(strings.length)];
        case 1: return [0, -3, 1.5, 1e21, 2 ** 53 - 1][random(5)];
        case 2: return [true, false, null][random(3)];
        case 3: return strings[random(strings.length)] + strings[random(strings.length)];
        case 4: return Array.from({ length: random(3) }, () => value(depth + 1));
        default: return Object.fromEntries(Array.from({ length: random(4) }, () => [strings[random(strings.length)], value(depth + 1)]));
      }
    };
    for (let i = 0; i < 300; i++) {
      const record = { generation: i + 1, specHash: 'abc', status: { phase: 'Running', details: value(0), more: [value(1), value(1)] } };
      expect(parse(recordYaml(record))).toEqual(record);
    }
    expect(recordYaml({ generation: 2, status: { phase: 'Running', port: 8012, runtimeRef: { kind: 'process', pid: 4242 }, conditions: [{ type: 'Ready', status: 'True' }] } }))
      .toBe('generation: 2\nstatus:\n  phase: Running\n  port: 8012\n  runtimeRef:\n    kind: process\n    pid: 4242\n  conditions:\n    - type: Ready\n      status: "True"\n');
  });
});

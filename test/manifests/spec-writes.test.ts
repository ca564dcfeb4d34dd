// A spec write (the API's start, stop, restart, delete mark) never replaces an edit it did not
// see: a foreign write lands at every step of it, by each kind of writer, and survives.
import { promises as fsp, type PathLike } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { parse } from 'yaml';
import { ConflictError, ManifestStore } from '../../src/manifests/store.ts';

const ORIGINAL = `# The data team's editor.
apiVersion: devbox.dev/v1alpha1
kind: EditorServer
metadata:
  name: data-pipeline   # must match the file name
spec:
  displayName: Data pipeline
  running: false
`;
/** What the other writer saves: the same file with another display name. */
const FOREIGN = ORIGINAL.replace('displayName: Data pipeline', 'displayName: Renamed by hand');

// Captured before any spy replaces them.
const realOpen = fsp.open;
const realRename = fsp.rename;
const realLink = fsp.link;

let root: string;
let dir: string;
let store: ManifestStore;
const file = () => join(dir, 'data-pipeline.yaml');

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'devbox-spec-writes-'));
  dir = join(root, 'manifests');
  await fsp.mkdir(dir);
  store = new ManifestStore(dir, join(root, 'data', 'status'));
  await writeFile(file(), ORIGINAL);
});

afterEach(async () => {
  vi.restoreAllMocks();
  await rm(root, { recursive: true, force: true });
});

/** The ways another program saves a file. */
const writers: Record<string, (handle: fsp.FileHandle) => Promise<void>> = {
  // git, and most editors: a new file renamed into place.
  'replaces the file': async () => {
    await writeFile(join(root, 'foreign.tmp'), FOREIGN);
    await realRename(join(root, 'foreign.tmp'), file());
  },
  // vim with backupcopy=yes, shell redirection: opens the path and truncates it.
  'writes in place by path': () => writeFile(file(), FOREIGN),
  // an editor that opened the file before the write started and saves through that handle.
  'writes through a handle opened earlier': async (handle) => {
    await handle.truncate(0);
    await handle.write(FOREIGN, 0);
    await handle.sync();
  },
};

type Step = 'after its read' | 'after its temporary file is written' | 'just before its rename' | 'right after its rename';

/** Makes `write` run once, at `step` of the store's next spec write. Works whatever the store's internals, through fs calls. */
function landAt(step: Step, write: () => Promise<void>): { landed: () => boolean } {
  let done = false;
  const once = async () => {
    if (done) return;
    done = true;
    await write();
  };
  if (step === 'after its read') {
    // Before its temporary file is opened: it has read the file and made its change.
    vi.spyOn(fsp, 'open').mockImplementation(async (...args: Parameters<typeof fsp.open>) => {
      if (String(args[0]).endsWith('.tmp')) await once();
      return realOpen(...args);
    });
  }
  if (step === 'after its temporary file is written') {
    vi.spyOn(fsp, 'open').mockImplementation(async (...args: Parameters<typeof fsp.open>) => {
      const handle = await realOpen(...args);
      if (!String(args[0]).endsWith('.tmp')) return handle;
      const close = handle.close.bind(handle);
      handle.close = async () => {
        await close();
        await once();
      };
      return handle;
    });
  }
  if (step === 'just before its rename') {
    vi.spyOn(fsp, 'rename').mockImplementation(async (from: PathLike, to: PathLike) => {
      await once();
      return realRename(from, to);
    });
  }
  if (step === 'right after its rename') {
    // Whichever call puts the new text at the manifest's path.
    vi.spyOn(fsp, 'rename').mockImplementation(async (from: PathLike, to: PathLike) => {
      await realRename(from, to);
      if (String(to) === file()) await once();
    });
    vi.spyOn(fsp, 'link').mockImplementation(async (from: PathLike, to: PathLike) => {
      await realLink(from, to);
      if (String(to) === file()) await once();
    });
  }
  return { landed: () => done };
}

describe('a spec write with a foreign write landing at each of its steps', () => {
  const steps: Step[] = ['after its read', 'after its temporary file is written', 'just before its rename', 'right after its rename'];
  for (const step of steps) {
    for (const [writer, write] of Object.entries(writers)) {
      it(`keeps the edit of a program that ${writer} ${step}`, async () => {
        const handle = await realOpen(file(), 'r+');
        try {
          const hook = landAt(step, () => write(handle));
          const result = await store.update('data-pipeline', (doc) => void doc.setIn(['spec', 'running'], true));
          expect(result).toBe('updated');
          expect(hook.landed()).toBe(true);
          const text = await readFile(file(), 'utf8');
          const later = step === 'right after its rename' && writer !== 'writes through a handle opened earlier';
          if (later) {
            // Saved after ours was in place: a later edit, which wins as any later edit would.
            expect(text).toBe(FOREIGN);
          } else {
            // Seen: the write started over on the foreign text and applied its change to it.
            expect(parse(text).spec).toEqual({ displayName: 'Renamed by hand', running: true });
            expect(text).toContain('# must match the file name');
          }
          expect(await readdir(dir)).toEqual(['data-pipeline.yaml']);
        } finally {
          await handle.close();
        }
      });
    }
  }

  it('gives up after a few attempts with a ConflictError (the API answers 409) when a new file appears every time', async () => {
    let edits = 0;
    vi.spyOn(fsp, 'link').mockImplementation(async (from: PathLike, to: PathLike) => {
      if (String(to) === file()) await writeFile(file(), FOREIGN.replace('Renamed by hand', `Edit ${++edits}`));
      return realLink(from, to);
    });
    const error = await store.update('data-pipeline', (doc) => void doc.setIn(['spec', 'running'], true)).catch((e) => e);
    expect(error).toBeInstanceOf(ConflictError);
    expect(error).toMatchObject({ status: 409, code: 'CONFLICT' });
    expect(error.message).toMatch(/kept changing while it was being written.*try again/);
    expect(await readFile(file(), 'utf8')).toBe(FOREIGN.replace('Renamed by hand', `Edit ${edits}`));
    expect(await readdir(dir)).toEqual(['data-pipeline.yaml']);
  });
});

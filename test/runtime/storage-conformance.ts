// The behaviour every storage (the half of a runtime that keeps a server's workspace, settings and
// extensions: folders on this machine, a volume in a cluster) must show: one suite, run unchanged
// against each runtime's storage through its Harness (an editor runs on it where a case needs one).
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/wait.ts';
import { editorsOf, startReady, type Harness } from './harness.ts';

export function storageConformance(label: string, setup: () => Promise<Harness>): void {
  describe(`${label}: storage conformance`, () => {
    let h: Harness;

    beforeEach(async () => {
      h = await setup();
    });
    afterEach(async () => {
      await h?.cleanup();
    });

    it('clones a git source into the workspace the editor opens, only while it is empty', async () => {
      const { git } = h.sources;
      await h.runtime.storage.prepare('alpha');
      expect(await h.runtime.storage.workspaceEmpty('alpha')).toBe(true);
      await h.runtime.storage.populate('alpha', git.source, new AbortController().signal);
      expect((await h.workspaceFiles('alpha')).get(git.file)).toBe(git.content);
      expect(await h.runtime.storage.workspaceEmpty('alpha')).toBe(false);

      await expect(h.runtime.storage.populate('alpha', h.sources.zip.source, new AbortController().signal)).rejects.toThrow();
      expect((await h.workspaceFiles('alpha')).has(h.sources.zip.file)).toBe(false);
      await startReady(h, 'alpha');
      expect((await h.workspaceFiles('alpha')).get(git.file), 'starting the editor keeps the files').toBe(git.content);
    });

    it('extracts a ZIP source into the workspace', async () => {
      const { zip } = h.sources;
      await h.runtime.storage.prepare('alpha');
      const outcome = await h.runtime.storage.populate('alpha', zip.source, new AbortController().signal);
      expect(outcome.entries).toBeGreaterThan(0);
      expect((await h.workspaceFiles('alpha')).get(zip.file)).toBe(zip.content);
      await startReady(h, 'alpha');
      expect((await h.workspaceFiles('alpha')).get(zip.file)).toBe(zip.content);
    });

    it('leaves the workspace empty when a populate is aborted mid-way, ready for the next one', async () => {
      await h.runtime.storage.prepare('alpha');
      const abort = new AbortController();
      const populating = h.runtime.storage.populate('alpha', h.sources.stalledGit, abort.signal);
      const settled = populating.then(() => 'resolved', () => 'rejected');
      await h.sources.stalledGitReached();
      abort.abort();
      expect(await settled).toBe('rejected');
      expect(await h.runtime.storage.workspaceEmpty('alpha')).toBe(true);
      expect(await h.workspaceFiles('alpha')).toEqual(new Map());

      await h.runtime.storage.populate('alpha', h.sources.zip.source, new AbortController().signal);
      expect((await h.workspaceFiles('alpha')).get(h.sources.zip.file)).toBe(h.sources.zip.content);
    });

    it('writes settings and the applied record, and reads them back across editor and controller restarts', async () => {
      await h.runtime.storage.prepare('alpha');
      expect(await h.runtime.storage.readSettings('alpha')).toBeUndefined();
      expect(await h.runtime.storage.readAppliedSettings('alpha')).toBeUndefined();
      const settings = '{\n  "editor.fontSize": 15,\n  // a comment the user wrote\n  "files.autoSave": "off"\n}\n';
      const applied = '{"editor.fontSize":15}';
      await h.runtime.storage.writeSettings('alpha', settings);
      await h.runtime.storage.writeAppliedSettings('alpha', applied);
      expect(await h.runtime.storage.readSettings('alpha')).toBe(settings);
      expect(await h.runtime.storage.readAppliedSettings('alpha')).toBe(applied);
      expect(await h.runtime.storage.readSettings('beta'), "one server's settings are not another's").toBeUndefined();

      const started = await startReady(h, 'alpha');
      await h.runtime.workload.stop('alpha', started.ref, 2000);
      const runtime = await h.restart();
      expect(await runtime.storage.readSettings('alpha')).toBe(settings);
      expect(await runtime.storage.readAppliedSettings('alpha')).toBe(applied);

      await runtime.storage.writeSettings('alpha', '{}\n');
      expect(await runtime.storage.readSettings('alpha'), 'a write replaces the file').toBe('{}\n');
      expect(await runtime.storage.readAppliedSettings('alpha')).toBe(applied);
    });

    it('installs an extension into the server and removes it again', async () => {
      const { id, key } = h.extension;
      await h.runtime.storage.prepare('alpha');
      await h.runtime.storage.prepare('beta');
      expect((await h.runtime.storage.installedExtensions('alpha')).has(key)).toBe(false);

      const installed = await h.runtime.storage.installExtension('alpha', id, new AbortController().signal);
      expect(installed.ok, installed.message).toBe(true);
      expect((await h.runtime.storage.installedExtensions('alpha')).has(key)).toBe(true);
      expect((await h.runtime.storage.installedExtensions('beta')).has(key), 'only into that server').toBe(false);

      const removed = await h.runtime.storage.uninstallExtension('alpha', key, new AbortController().signal);
      expect(removed.ok, removed.message).toBe(true);
      expect((await h.runtime.storage.installedExtensions('alpha')).has(key)).toBe(false);
    });

    it('gives its files as folders for a snapshot while the editor runs, and takes a restore back while it is stopped', async () => {
      const { zip } = h.sources;
      await h.runtime.storage.prepare('alpha');
      await h.runtime.storage.populate('alpha', zip.source, new AbortController().signal);
      await h.runtime.storage.writeSettings('alpha', '{"kept": 1}\n');
      const staging = await mkdtemp(join(tmpdir(), 'devbox-staging-'));
      const options = () => ({ signal: AbortSignal.timeout(120_000), stagingDir: staging, userFiles: ['settings.json', 'keybindings.json'] });
      try {
        const started = await startReady(h, 'alpha');
        const snapshot = await h.runtime.storage.openForSnapshot('alpha', options());
        try {
          expect(await readFile(join(snapshot.workspace, zip.file), 'utf8')).toBe(zip.content);
          expect(await readFile(join(snapshot.user, 'settings.json'), 'utf8')).toBe('{"kept": 1}\n');
        } finally {
          await snapshot.release();
        }
        if (!snapshot.live) expect(existsSync(snapshot.workspace), 'a copy is removed once released').toBe(false);
        await h.runtime.workload.stop('alpha', started.ref, 2000);
        await eventually(async () => !(await h.running(started.ref)));

        const restore = await h.runtime.storage.openForRestore('alpha', options());
        try {
          expect(await readFile(join(restore.workspace, zip.file), 'utf8'), 'a restore starts from the files as they are').toBe(zip.content);
          await writeFile(join(restore.workspace, 'restored.txt'), 'back again');
          await writeFile(join(restore.user, 'keybindings.json'), '[]\n');
          await restore.commit(AbortSignal.timeout(120_000));
        } finally {
          await restore.release();
        }
        const files = await h.workspaceFiles('alpha');
        expect(files.get('restored.txt')).toBe('back again');
        expect(files.get(zip.file), 'what the restore left alone is kept').toBe(zip.content);
        expect(await h.runtime.storage.readSettings('alpha')).toBe('{"kept": 1}\n');
        expect((await h.workspaceFiles('beta')).size, "another server's storage is not touched").toBe(0);
      } finally {
        await rm(staging, { recursive: true, force: true });
      }
    });

    it("removes everything a server has, and nothing of another server's", async () => {
      await h.runtime.storage.prepare('beta');
      await h.runtime.storage.writeSettings('beta', '{}\n');
      await h.runtime.storage.prepare('alpha');
      await h.runtime.storage.populate('alpha', h.sources.zip.source, new AbortController().signal);
      await h.runtime.storage.writeSettings('alpha', '{"a":1}\n');
      await h.runtime.storage.writeAppliedSettings('alpha', '{"a":1}');
      expect((await h.runtime.storage.installExtension('alpha', h.extension.id, new AbortController().signal)).ok).toBe(true);
      const started = await startReady(h, 'alpha');
      await h.runtime.workload.stop('alpha', started.ref, 2000);
      await eventually(async () => !(await h.running(started.ref)));
      expect(await h.leftovers('alpha')).not.toEqual([]);

      await h.runtime.storage.remove('alpha');
      expect(await h.leftovers('alpha')).toEqual([]);
      expect(await h.runtime.storage.workspaceEmpty('alpha')).toBe(true);
      expect(await h.runtime.storage.readSettings('alpha')).toBeUndefined();
      expect(await h.runtime.storage.readAppliedSettings('alpha')).toBeUndefined();
      expect(await h.runtime.storage.installedExtensions('alpha')).toEqual(new Map());
      expect(await editorsOf(h.runtime, 'alpha')).toEqual([]);
      expect(await h.runtime.storage.readSettings('beta')).toBe('{}\n');
    });

  });
}

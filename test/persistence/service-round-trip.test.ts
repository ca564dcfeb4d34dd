// A redeploy with a folder target, end to end: servers made every way (empty, git, ZIP), worked
// in, the service stopped with its editors, the manifests and data folders gone as in a fresh
// container; the next service brings every server back before its editor starts.
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { postForm } from '../helpers/form.ts';
import { killEditors, startTestService } from '../helpers/service.ts';
import { makeRepo, serveGitDaemon } from '../workspace/git-fixtures.ts';
import { buildZip } from '../workspace/zip-fixtures.ts';
import { hashTree, recordWhen, restoredWhen, sorted } from './service-fixtures.ts';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('a redeploy with a persistence target', () => {
  it('brings every server back: same ids, byte-identical files, settings kept, extensions reinstalled, editors as their manifests say', async () => {
    const base = await fs.mkdtemp(join(tmpdir(), 'devbox-persist-e2e-'));
    cleanups.push(() => fs.rm(base, { recursive: true, force: true }));
    const keep = join(base, 'keep');
    await fs.mkdir(keep);
    await makeRepo(join(base, 'repos'), 'project');
    const daemon = await serveGitDaemon(join(base, 'repos'));
    cleanups.push(() => daemon.stop());
    const root = join(base, 'machine');
    const open = async () => {
      const service = await startTestService({ root, persistTo: keep });
      cleanups.push(async () => {
        await service.close({ stopEditors: true }).catch(() => undefined);
        await killEditors(service.settings.dataDir);
      });
      return service;
    };

    const first = await open();
    const empty = await first.request('POST', '/servers', { name: 'Empty', extensions: ['acme.lint'] });
    expect(empty.status, JSON.stringify(empty.body)).toBe(201);
    const cloned = await postForm(`${first.url}/servers/create-with-workspace`, { name: 'Cloned', extensions: '[]', github_url: daemon.url('project') });
    expect(cloned.status, JSON.stringify(cloned.body)).toBe(201);
    const zip = buildZip([{ name: 'app/main.py', data: 'print("zip")\n' }, { name: 'data/blob.bin', data: Buffer.from([0, 1, 2, 255, 254]) }]);
    const zipped = await postForm(`${first.url}/servers/create-with-workspace`, { name: 'Zipped', extensions: '[]' }, zip);
    expect(zipped.status, JSON.stringify(zipped.body)).toBe(201);
    const ids = [empty.body.id, cloned.body.id, zipped.body.id] as string[];
    for (const id of ids) expect((await first.request('POST', `/servers/${id}/start`)).status).toBe(200);
    const names = await Promise.all(ids.map(async (id) => (await recordWhen(first, id, 'running')).manifest as string));
    expect(names).toEqual(['empty', 'cloned', 'zipped']);

    // Work in each: files in the workspace, a key of the user's own in settings.json, an extension installed inside the editor.
    const data = first.settings.dataDir;
    for (const name of names) {
      const workspace = join(data, 'workspaces', name);
      await fs.mkdir(join(workspace, 'notes', 'deep'), { recursive: true });
      await fs.writeFile(join(workspace, 'notes', 'deep', 'today.md'), `# ${name}\nunpushed work\n`);
      await fs.writeFile(join(workspace, 'bytes.bin'), Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7) % 256)));
      await fs.writeFile(join(workspace, 'empty.txt'), '');
      const user = join(data, 'editors', name, 'user-data', 'User');
      await fs.mkdir(join(user, 'snippets'), { recursive: true });
      const settings = JSON.parse(await fs.readFile(join(user, 'settings.json'), 'utf8').catch(() => '{}'));
      await fs.writeFile(join(user, 'settings.json'), JSON.stringify({ ...settings, 'editor.fontSize': 17, 'workbench.colorTheme': `theme of ${name}` }, null, 2));
      await fs.writeFile(join(user, 'keybindings.json'), '[{ "key": "ctrl+k", "command": "noop" }]\n');
      await fs.writeFile(join(user, 'snippets', 'python.json'), '{}\n');
    }
    const extra = join(data, 'editors', 'empty', 'extensions', 'acme.extra-1.0.0');
    await fs.mkdir(extra, { recursive: true });
    await fs.writeFile(join(extra, 'package.json'), JSON.stringify({ name: 'extra', version: '1.0.0' }));
    // One server stopped on purpose: it comes back stopped.
    expect((await first.request('POST', `/servers/${cloned.body.id}/stop`)).status).toBe(200);

    const before = new Map<string, Array<[string, string]>>();
    for (const name of names) {
      before.set(name, sorted(await hashTree(join(data, 'workspaces', name))));
      before.set(`${name}/User`, sorted(await hashTree(join(data, 'editors', name, 'user-data', 'User'))));
    }
    expect(before.get('cloned')!.some(([path]) => path.startsWith('.git/'))).toBe(true);

    // The platform's SIGTERM: final snapshots, then the service and its editors stop.
    const summary = await first.persistence!.snapshotAll('shutdown', 12_000);
    expect(summary.failed).toEqual([]);
    await first.close({ stopEditors: true });
    await killEditors(data);
    // A fresh container: neither manifests nor data.
    await fs.rm(join(root, 'manifests'), { recursive: true, force: true });
    await fs.rm(data, { recursive: true, force: true });

    const second = await open();
    const records = await Promise.all(ids.map((id, i) => restoredWhen(second, id, i === 1 ? 'Stopped' : 'Running')));
    expect(records.map((r) => r.manifest)).toEqual(names);
    expect(records.map((r) => r.id)).toEqual(ids);
    // Restored before the editor started, and said so.
    for (const record of records) {
      expect(record.conditions.find((c: any) => c.type === 'Restored')).toMatchObject({ status: 'True', reason: 'Restored' });
      expect(record.conditions.find((c: any) => c.type === 'Restored').message).toMatch(/files from snapshot/);
      expect(record.persistence.last_snapshot_id).toEqual(expect.any(String));
    }
    for (const name of names) {
      expect(sorted(await hashTree(join(data, 'workspaces', name))), name).toEqual(before.get(name));
      expect(sorted(await hashTree(join(data, 'editors', name, 'user-data', 'User'))), `${name}/User`).toEqual(before.get(`${name}/User`));
    }
    // The spec's extension by the controller, the one installed inside the editor by the restore.
    const installed = async (name: string, id: string) => fs.access(join(data, 'editors', name, 'extensions', `${id}-1.0.0`, 'package.json')).then(() => true, () => false);
    await recordWhen(second, ids[0], 'running');
    expect(await installed('empty', 'acme.lint')).toBe(true);
    expect(await installed('empty', 'acme.extra')).toBe(true);
    // Its start and end as events.
    const events = (await second.request('GET', `/servers/${ids[0]}/events`)).body.data.events as Array<{ reason: string }>;
    expect(events.map((e) => e.reason)).toEqual(expect.arrayContaining(['Restoring', 'Restored']));
  }, 120_000);
});

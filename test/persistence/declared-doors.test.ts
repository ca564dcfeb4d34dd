// Servers declared by every door and never started, and edits made to a stopped server, come back
// after a redeploy on an empty machine, with a folder and with a Unity Catalog volume as the
// target: the API, a template, a ZIP, a git repository, a hand-written file and a GitOps sync.
// (The dashboard creates through the same API route.) Each keeps its id, port, manifest text and
// workspace bytes; and a manifest-only change is kept within seconds as one small object.
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { postForm } from '../helpers/form.ts';
import { eventually, type TestService } from '../helpers/service.ts';
import { commit, makeGitRepo, manifest } from '../gitops/repos.ts';
import { writeTemplate, writeWhole } from '../templates/fixtures.ts';
import { makeRepo, serveGitDaemon } from '../workspace/git-fixtures.ts';
import { buildZip } from '../workspace/zip-fixtures.ts';
import { fleetOf, makeTarget, scratch, sigterm, startOn, wipe, type TargetKind } from './redeploy-fixtures.ts';
import { restoredWhen } from './service-fixtures.ts';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

describe.each<TargetKind>(['folder', 'volume'])('what a person declared, with a %s as the target', (kind) => {
  it('brings back a server created by each door and never started, and the edits of a stopped one', async () => {
    const base = await scratch(`devbox-declared-${kind}-`);
    cleanups.push(() => fs.rm(base, { recursive: true, force: true }));
    const target = await makeTarget(kind, base);
    cleanups.push(() => target.close());
    const repos = join(base, 'repos');
    await makeRepo(repos, 'project');
    const fleetRepo = await makeGitRepo(repos, 'fleet', { 'servers/synced.yaml': manifest('synced', { running: false, displayName: 'From the fleet repo' }) });
    const daemon = await serveGitDaemon(repos);
    cleanups.push(() => daemon.stop());
    const templatesDir = join(base, 'templates');
    await fs.mkdir(templatesDir);
    await writeTemplate(templatesDir, 'course', { name: 'Course', tab: 'Teaching', spec: { settings: { 'editor.fontSize': 15 } } });

    const services: TestService[] = [];
    const open = async () => {
      const service = await startOn(target, join(base, 'machine'), cleanups, {
        templatesDir, gitSync: { manifests: { url: daemon.url('fleet'), path: 'servers', intervalSeconds: 3600 } },
      });
      services.push(service);
      return service;
    };
    const first = await open();
    const created = (answer: { status: number; body: any }) => {
      expect(answer.status, JSON.stringify(answer.body)).toBe(201);
      return answer.body.id as string;
    };
    const ids = {
      api: created(await first.request('POST', '/servers', { name: 'By the API' })),
      template: created(await first.request('POST', '/servers/create-from-template', { name: 'From a template', template_id: 'course', tab_name: 'Teaching' })),
      zip: created(await postForm(`${first.url}/servers/create-with-workspace`, { name: 'From a ZIP', extensions: '[]' },
        buildZip([{ name: 'notes.md', data: '# Lab 1\n' }, { name: 'lab/data.csv', data: 'a,b\n1,2\n' }]))),
      git: created(await postForm(`${first.url}/servers/create-with-workspace`, { name: 'From git', extensions: '[]', github_url: daemon.url('project') })),
    };
    // A file written by hand, and one the fleet repository declares.
    await writeWhole(join(first.settings.manifestsDir, 'handmade.yaml'), manifest('handmade', { running: false, displayName: 'Written by hand' }));
    const seen = (name: string) => eventually(async () => {
      const { body } = await first.request('GET', '/servers');
      return body.find((s: { manifest: string; status: string }) => s.manifest === name && s.status === 'stopped');
    }, 20_000);
    await seen('handmade');
    await seen('synced');

    // A server that ran once and is stopped, then edited by hand and through the API.
    const edited = created(await first.request('POST', '/servers', { name: 'Edited later' }));
    expect((await first.request('POST', `/servers/${edited}/start`)).status).toBe(200);
    expect((await first.request('POST', `/servers/${edited}/stop`)).status).toBe(200);
    const editedFile = join(first.settings.manifestsDir, 'edited-later.yaml');
    const text = (await fs.readFile(editedFile, 'utf8'))
      .replace(/displayName: .*/, 'displayName: Renamed while stopped')
      .replace(/spec:\n/, 'spec:\n  settings: { "editor.tabSize": 3 }\n');
    await writeWhole(editedFile, text);
    await eventually(async () => (await first.request('GET', `/servers/${edited}`)).body.name === 'Renamed while stopped', 20_000);
    expect((await first.request('POST', `/servers/${edited}/install-extension`, { extension: 'acme.quick' })).status).toBe(200);

    // Kept within seconds, each change as one small object: no wait for a stop or a shutdown.
    await eventually(async () => (await first.request('GET', '/health')).body.persistence?.declared_behind === 0 || undefined, 10_000);
    const before = await fleetOf(first);
    expect(Object.keys(before).sort()).toEqual(['by-the-api', 'edited-later', 'from-a-template', 'from-a-zip', 'from-git', 'handmade', 'synced']);
    expect(before['edited-later'].manifest).toContain('Renamed while stopped');
    expect(before['edited-later'].manifest).toContain('acme.quick');
    expect(before['from-a-zip'].workspace.map(([path]) => path)).toEqual(['lab/data.csv', 'notes.md']);
    expect(before['from-git'].workspace.map(([path]) => path)).toContain('src/main.py');
    for (const server of Object.values(before)) expect(server.status).toBe('stopped');

    await sigterm(first);
    await wipe(first);
    // The fleet repository moved on meanwhile: the restored file is the one kept, until the next sync.
    await commit(fleetRepo, { 'README.md': 'unrelated\n' });

    const second = await open();
    for (const server of Object.values(before)) await restoredWhen(second, server.id, 'Stopped', 60_000);
    const after = await fleetOf(second);
    expect(after).toEqual(before);
    expect(Object.values(ids).every((id) => Object.values(after).some((s) => s.id === id))).toBe(true);
  }, 180_000);

  it('keeps a manifest-only change of a stopped server as one small object, without a snapshot', async () => {
    const base = await scratch(`devbox-declared-small-${kind}-`);
    cleanups.push(() => fs.rm(base, { recursive: true, force: true }));
    const target = await makeTarget(kind, base);
    cleanups.push(() => target.close());
    const service = await startOn(target, join(base, 'machine'), cleanups);
    const id = (await service.request('POST', '/servers', { name: 'Quiet' })).body.id;
    await eventually(async () => (await service.request('GET', `/servers/${id}`)).body.persistence?.last_snapshot_id ?? undefined);
    await eventually(async () => (await service.request('GET', '/health')).body.persistence?.declared_behind === 0 || undefined, 10_000);
    const kept = async (folder: string) => (target.workspace
      ? target.workspace.volumeFilePaths().filter((p) => p.includes(`/servers/quiet/${folder}/`)).map((p) => [p, target.workspace!.volumeFile(p)!] as const)
      : await Promise.all((await fs.readdir(join(target.persistTo, 'servers', 'quiet', folder))).map(async (f) => [f, await fs.readFile(join(target.persistTo, 'servers', 'quiet', folder, f))] as const)));
    const snapshots = (await kept('snapshots')).map(([path]) => path);
    const written = (await service.request('GET', '/health')).body.persistence.counts.declared_written;

    const file = join(service.settings.manifestsDir, 'quiet.yaml');
    await writeWhole(file, (await fs.readFile(file, 'utf8')).replace(/displayName: .*/, 'displayName: Renamed quietly'));
    const declared = await eventually(async () => {
      const records = await kept('declared');
      return records.length === 1 && records[0][1].toString().includes('Renamed quietly') ? records : undefined;
    }, 10_000);
    expect(declared[0][1].length).toBeLessThan(16 * 1024);
    // The edit, and the status settling on its generation if that comes more than the coalescing
    // second later (the count moves once the flush that wrote the record has ended).
    const more = await eventually(async () => ((await service.request('GET', '/health')).body.persistence.counts.declared_written - written) || undefined, 10_000);
    expect(more).toBeOneOf([1, 2]);
    expect((await kept('snapshots')).map(([path]) => path)).toEqual(snapshots);
  }, 60_000);
});

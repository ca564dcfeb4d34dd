// POST /servers/{id}/clone-workspace: fills an existing server's empty workspace from github_url,
// also while its editor runs; a full workspace is refused and a failed clone keeps the server.
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { processExists, startTestService, type TestService } from '../helpers/service.ts';
import { freePort, makeRepo } from '../workspace/git-fixtures.ts';
import { postForm as submitForm } from '../helpers/form.ts';

let service: TestService;
let repos: string;

beforeAll(async () => {
  repos = await fs.mkdtemp(join(tmpdir(), 'devbox-repos-'));
  await makeRepo(repos, 'project');
  service = await startTestService();
});
afterAll(async () => {
  await service?.stop();
  await fs.rm(repos, { recursive: true, force: true });
});

const postForm = (path: string, fields: Record<string, string>) => submitForm(service.url + path, fields);

describe('POST /servers/{id}/clone-workspace', () => {
  it('clones into the empty workspace of a running server, whose editor keeps running', async () => {
    const created = (await service.request('POST', '/servers', { name: 'Steps' })).body;
    const { pid } = (await service.request('POST', `/servers/${created.id}/start`)).body.data;
    const { status, body } = await postForm(`/servers/${created.id}/clone-workspace`, { github_url: `file://${repos}/project` });
    expect(status).toBe(200);
    expect(body).toMatchObject({ status: 'success', data: { id: created.id, status: 'running', pid }, workspace_path: created.workspace_path });
    expect(body.message).toMatch(/cloned from file:/);
    expect(await fs.readFile(join(created.workspace_path, 'README.md'), 'utf8')).toBe('# project\n');
    expect(processExists(pid)).toBe(true);

    // Once filled, the workspace takes no second source.
    const again = await postForm(`/servers/${created.id}/clone-workspace`, { github_url: `file://${repos}/project` });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('WORKSPACE_NOT_EMPTY');
    expect(again.body.error.message).toMatch(/README\.md/);
  });

  it('keeps the server, without the source, when the clone fails, and says why', async () => {
    const created = (await service.request('POST', '/servers', { name: 'Kept' })).body;
    const port = await freePort();
    const { status, body } = await postForm(`/servers/${created.id}/clone-workspace`, { github_url: `git://127.0.0.1:${port}/project` });
    expect(status).toBe(422);
    expect(body.error.code).toBe('WORKSPACE_SOURCE_FAILED');
    expect(body.error.message).toMatch(/unable to connect|Connection refused/i);
    expect((await service.request('GET', `/servers/${created.id}`)).status).toBe(200);
    const manifest = parse(await fs.readFile(join(service.settings.manifestsDir, 'kept.yaml'), 'utf8'));
    expect(manifest.spec.workspace?.source).toBeUndefined();
    expect(await fs.readdir(created.workspace_path)).toEqual([]);
  });

  it('refuses a hostile URL with 400 and an unknown server with 404, changing nothing', async () => {
    const created = (await service.request('POST', '/servers', { name: 'Guarded' })).body;
    const before = await fs.readFile(join(service.settings.manifestsDir, 'guarded.yaml'), 'utf8');
    const hostile = await postForm(`/servers/${created.id}/clone-workspace`, { github_url: `--upload-pack=touch ${service.root}/pwned` });
    expect(hostile.status).toBe(400);
    expect(hostile.body.error.code).toBe('INVALID_GIT_URL');
    expect(await fs.readFile(join(service.settings.manifestsDir, 'guarded.yaml'), 'utf8')).toBe(before);
    const unknown = await postForm('/servers/no-such-id/clone-workspace', { github_url: `file://${repos}/project` });
    expect(unknown.status).toBe(404);
  });
});

describe('the multi-step creation as a browser client runs it', () => {
  it('create-metadata, install-extension, apply-group-settings, clone-workspace, stop, start: a working server', async () => {
    const created = await service.request('POST', '/servers/create-metadata', { name: 'Browser steps' });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const { id, workspace_path: workspace } = created.body;
    for (const extension of ['acme.lint', 'acme.fmt']) {
      const installed = await service.request('POST', `/servers/${id}/install-extension`, { extension });
      expect(installed.status, JSON.stringify(installed.body)).toBe(200);
    }
    const group = await service.request('POST', `/servers/${id}/apply-group-settings`, { groupName: 'python' });
    expect(group.status, JSON.stringify(group.body)).toBe(200);
    const cloned = await postForm(`/servers/${id}/clone-workspace`, { github_url: `file://${repos}/project` });
    expect(cloned.status, JSON.stringify(cloned.body)).toBe(200);
    expect((await service.request('POST', `/servers/${id}/stop`)).status).toBe(200);
    const started = await service.request('POST', `/servers/${id}/start`);
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    expect(processExists(started.body.data.pid)).toBe(true);

    const record = (await service.request('GET', `/servers/${id}`)).body;
    expect(record.status).toBe('running');
    expect(record.extensions).toEqual(['acme.lint', 'acme.fmt']);
    expect(record.extension_status.map((e: { id: string; state: string }) => `${e.id} ${e.state}`))
      .toEqual(expect.arrayContaining(['acme.lint Installed', 'acme.fmt Installed', 'ms-python.python Installed']));
    expect(await fs.readFile(join(workspace, 'README.md'), 'utf8')).toBe('# project\n');
    const page = await fetch(`${service.url}/vscode/${record.port}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('stub editor');
    await service.request('DELETE', `/servers/${id}`);
  });
});

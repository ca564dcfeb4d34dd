// POST /servers/create-with-workspace: a multipart form whose github_url fills the new server's
// workspace before the 201; refused sources write nothing, failed ones leave no server behind.
import { existsSync, promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.ts';
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

const manifestFiles = async () => (await fs.readdir(service.settings.manifestsDir)).filter((f) => f.endsWith('.yaml'));

describe('POST /servers/create-with-workspace', () => {
  it('creates a stopped server whose workspace holds the clone, and answers once it is there', async () => {
    const { status, body } = await postForm('/servers/create-with-workspace', {
      name: 'Cloned project', extensions: '[]', github_url: `file://${repos}/project`,
    });
    expect(status).toBe(201);
    expect(Object.keys(body).sort()).toEqual(['id', 'name', 'port', 'status', 'workspace_path']);
    expect(body).toMatchObject({ name: 'Cloned project', status: 'stopped' });
    expect(body.port).toBeGreaterThanOrEqual(service.settings.config.ports.min);
    expect(await fs.readFile(join(body.workspace_path, 'README.md'), 'utf8')).toBe('# project\n');
    const manifest = await fs.readFile(join(service.settings.manifestsDir, 'cloned-project.yaml'), 'utf8');
    expect(manifest).toContain(`url: file://${repos}/project`);

    const started = await service.request('POST', `/servers/${body.id}/start`);
    expect(started.status).toBe(200);
    expect(started.body.data.status).toBe('running');
  });

  it.each([
    ['an option-shaped URL', (root: string) => `--upload-pack=touch ${root}/pwned`, /starts with "-"/],
    ['an ext:: URL', (root: string) => `ext::sh -c touch% ${root}/pwned`, /transport "ext::"/],
    ['a scheme not allowed', () => 'ftp://example.com/repo.git', /scheme "ftp" is not allowed/],
  ])('refuses %s with 400 and writes nothing', async (_what, url, problem) => {
    const before = await manifestFiles();
    const { status, body } = await postForm('/servers/create-with-workspace', { name: 'Hostile', github_url: url(service.root) });
    expect(status).toBe(400);
    expect(body.error.code).toBe('INVALID_GIT_URL');
    expect(body.error.message).toMatch(problem);
    expect(await manifestFiles()).toEqual(before);
    expect(existsSync(join(service.root, 'pwned'))).toBe(false);
    expect(existsSync(join(service.settings.dataDir, 'workspaces', 'hostile'))).toBe(false);
  });

  it('takes git_ref, extension_groups and settings as the JSON body of POST /servers would, and refuses bad ones saying which field', async () => {
    const { status, body } = await postForm('/servers/create-with-workspace', {
      name: 'On feature', github_url: `file://${repos}/project`, git_ref: 'feature',
      extension_groups: '["git"]', settings: '{"editor.fontSize": 15}',
    });
    expect(status).toBe(201);
    // The branch was cloned, not the default one.
    expect(await fs.readFile(join(body.workspace_path, 'notes.txt'), 'utf8')).toBe('on feature\n');
    const manifest = await fs.readFile(join(service.settings.manifestsDir, 'on-feature.yaml'), 'utf8');
    expect(manifest).toMatch(/ref: feature/);
    expect(manifest).toMatch(/extensionGroups:\s*\n\s*- git/);
    expect(manifest).toMatch(/editor\.fontSize: 15/);

    const before = await manifestFiles();
    for (const [fields, problem] of [
      [{ git_ref: '--upload-pack=x' }, /git_ref: .* is not a branch or tag name/],
      [{ extension_groups: '["no-such-group"]' }, /extension_groups: unknown group "no-such-group"/],
      [{ extension_groups: 'git' }, /extension_groups must be a JSON array of group names/],
      [{ settings: '{"a":' }, /settings must be a JSON object of editor settings/],
    ] as const) {
      const refused = await postForm('/servers/create-with-workspace', { name: 'Refused', github_url: `file://${repos}/project`, ...fields });
      expect(refused.status, JSON.stringify(fields)).toBe(400);
      expect(refused.body.error.message).toMatch(problem);
    }
    const refRef = await postForm('/servers/create-with-workspace', { name: 'Refused', git_ref: 'main' });
    expect(refRef.body.error.message).toMatch(/git_ref goes with github_url/);
    expect(await manifestFiles()).toEqual(before);
  });

  it('refuses a form without a source, a bad extensions field or a blank name with 400', async () => {
    expect((await postForm('/servers/create-with-workspace', { name: 'No source' })).body.error.message).toMatch(/give github_url/);
    const badExtensions = await postForm('/servers/create-with-workspace', { name: 'x', extensions: 'python', github_url: `file://${repos}/project` });
    expect(badExtensions.status).toBe(400);
    expect(badExtensions.body.error.message).toMatch(/JSON array/);
    const optionId = await postForm('/servers/create-with-workspace', { name: 'x', extensions: '["--help"]', github_url: `file://${repos}/project` });
    expect(optionId.status).toBe(400);
    expect((await postForm('/servers/create-with-workspace', { name: '  ', github_url: `file://${repos}/project` })).status).toBe(400);
    const json = await service.request('POST', '/servers/create-with-workspace', { name: 'x', github_url: `file://${repos}/project` });
    expect(json.status).toBe(400);
    expect(json.body.error.message).toMatch(/multipart\/form-data/);
  });

  it('answers 422 saying why when the clone fails, and leaves no server, manifest or folder behind', async () => {
    const before = await manifestFiles();
    const port = await freePort();
    const { status, body } = await postForm('/servers/create-with-workspace', { name: 'Unreachable', github_url: `git://127.0.0.1:${port}/project` });
    expect(status).toBe(422);
    expect(body.error.code).toBe('WORKSPACE_SOURCE_FAILED');
    expect(body.error.message).toMatch(/unable to connect|Connection refused/i);
    expect(body.error.message).toMatch(/the server was not kept/);
    expect(await manifestFiles()).toEqual(before);
    expect((await service.request('GET', '/servers')).body.map((s: { name: string }) => s.name)).not.toContain('Unreachable');
    expect(existsSync(join(service.settings.dataDir, 'workspaces', 'unreachable'))).toBe(false);
    expect(existsSync(join(service.settings.dataDir, 'status', 'unreachable.yaml'))).toBe(false);
  });
});

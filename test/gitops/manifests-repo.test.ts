// A manifests repository served by `git daemon` on loopback, followed by the running service:
// servers it declares are created, changed and deleted as it changes; the API may not change
// them; a local edit is set back; a bad file is reported and skipped; an unreachable repository
// is reported and the service goes on.
import { existsSync, promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, processExists, startTestService, type TestService } from '../helpers/service.ts';
import { serveGitDaemon, type GitDaemon } from '../workspace/git-fixtures.ts';
import { commit, head, makeGitRepo, manifest } from './repos.ts';

describe('manifests from a git repository', () => {
  let base: string;
  let repo: string;
  let daemon: GitDaemon;
  let service: TestService;

  beforeAll(async () => {
    base = await fs.mkdtemp(join(tmpdir(), 'devbox-gitops-'));
    repo = await makeGitRepo(join(base, 'repos'), 'fleet', {
      'README.md': '# Our editors\n',
      'servers/alpha.yaml': manifest('alpha', { running: true, displayName: 'Alpha' }),
    });
    daemon = await serveGitDaemon(join(base, 'repos'));
    // An hour: only the first sync and POST /sync move the servers here.
    service = await startTestService({ gitSync: { manifests: { url: daemon.url('fleet'), path: 'servers', intervalSeconds: 3600 } } });
  });
  afterAll(async () => {
    await service?.stop();
    await daemon?.stop();
    await fs.rm(base, { recursive: true, force: true });
  });

  const manifestFile = (name: string) => join(service.settings.manifestsDir, `${name}.yaml`);
  const server = async (name: string) => (await service.request('GET', '/servers')).body
    .find((s: { workspace_path: string }) => s.workspace_path === join(service.settings.dataDir, 'workspaces', name));
  const running = (name: string) => eventually(async () => {
    const found = await server(name);
    return found?.status === 'running' && found.pid ? found : undefined;
  }, 20_000);
  const sync = async () => {
    const answer = await service.request('POST', '/sync');
    expect(answer.status).toBe(200);
    return answer.body;
  };

  it('starts the servers the repository declares, with the repository\'s file as it is', async () => {
    const alpha = await running('alpha');
    expect(alpha.name).toBe('Alpha');
    expect(processExists(alpha.pid)).toBe(true);
    expect(await fs.readFile(manifestFile('alpha'), 'utf8')).toBe(manifest('alpha', { running: true, displayName: 'Alpha' }));
    const owned = JSON.parse(await fs.readFile(join(service.settings.dataDir, 'gitops', 'manifests-owned.json'), 'utf8'));
    expect(owned.servers.alpha).toMatchObject({ file: 'servers/alpha.yaml', commit: head(repo) });
    // The controller's status is in the data folder, never in the manifests folder or the checkout.
    expect(existsSync(join(service.settings.dataDir, 'status', 'alpha.yaml'))).toBe(true);
    expect(await fs.readdir(join(service.settings.dataDir, 'gitops', 'manifests', 'servers'))).toEqual(['alpha.yaml']);
  });

  it('answers 409 to an API change of a server the repository owns, naming the repository and the file', async () => {
    const alpha = await running('alpha');
    for (const [method, path, body] of [
      ['POST', `/servers/${alpha.id}/stop`, undefined],
      ['POST', `/servers/${alpha.id}/restart`, undefined],
      ['POST', `/servers/${alpha.id}/install-extension`, { extension: 'redhat.vscode-yaml' }],
      ['DELETE', `/servers/${alpha.id}`, undefined],
    ] as const) {
      const answer = await service.request(method, path, body);
      expect(answer.status, `${method} ${path}`).toBe(409);
      expect(answer.body.error.code).toBe('MANAGED_BY_GIT');
      expect(answer.body.error.message).toContain(daemon.url('fleet'));
      expect(answer.body.error.message).toContain('servers/alpha.yaml');
    }
    // Reading is unaffected, and nothing changed.
    expect((await service.request('GET', `/servers/${alpha.id}`)).status).toBe(200);
    expect((await service.request('GET', `/servers/${alpha.id}/health`)).body.data.process_exists).toBe(true);
    expect((await server('alpha')).pid).toBe(alpha.pid);
    expect(await fs.readFile(manifestFile('alpha'), 'utf8')).toBe(manifest('alpha', { running: true, displayName: 'Alpha' }));
  });

  it('sets a hand edit of an owned manifest back to the repository\'s at the next sync', async () => {
    await fs.writeFile(manifestFile('alpha'), manifest('alpha', { running: true, displayName: 'Edited by hand' }));
    await eventually(async () => (await server('alpha'))?.name === 'Edited by hand');
    await sync();
    expect(await fs.readFile(manifestFile('alpha'), 'utf8')).toBe(manifest('alpha', { running: true, displayName: 'Alpha' }));
    await eventually(async () => (await server('alpha'))?.name === 'Alpha');
  });

  it('stops a server whose file in the repository says running: false', async () => {
    const { pid } = await running('alpha');
    const pushed = await commit(repo, { 'servers/alpha.yaml': manifest('alpha', { running: false, displayName: 'Alpha' }) });
    const answer = await sync();
    expect(answer.data.manifests).toMatchObject({ commit: pushed, last_error: null, servers: ['alpha'] });
    await eventually(async () => (await server('alpha'))?.status === 'stopped', 15_000);
    await eventually(() => !processExists(pid), 10_000);
  });

  it('adds a server for a new file, and reports and skips files it cannot use while the others sync', async () => {
    // A server made through the API: the repository may not take its name.
    const local = await service.request('POST', '/servers', { name: 'Local' });
    const localText = await fs.readFile(manifestFile('local'), 'utf8');
    await commit(repo, {
      'servers/beta.yaml': manifest('beta', { running: true }),
      'servers/broken.yaml': 'apiVersion: devbox.dev/v1alpha1\nkind: EditorServer\nmetadata: { name: broken\nspec: [\n',
      'servers/misnamed.yaml': manifest('other-name', { running: true }),
      'servers/wrong-kind.yaml': manifest('wrong-kind', { running: true }).replace('kind: EditorServer', 'kind: Pod'),
      'servers/local.yaml': manifest('local', { running: true, displayName: 'Taken over?' }),
    });
    const answer = await sync();
    const problems: Array<{ file: string; problem: string }> = answer.data.manifests.problems;
    expect(problems.map((p) => p.file).sort()).toEqual(['servers/broken.yaml', 'servers/local.yaml', 'servers/misnamed.yaml', 'servers/wrong-kind.yaml']);
    expect(problems.find((p) => p.file === 'servers/misnamed.yaml')!.problem).toMatch(/must equal the file name/);
    expect(problems.find((p) => p.file === 'servers/local.yaml')!.problem).toMatch(/exists already .* does not come from this repository/);
    expect(answer.data.manifests.servers).toEqual(['alpha', 'beta']);

    await running('beta');
    for (const name of ['broken', 'misnamed', 'other-name', 'wrong-kind']) expect(existsSync(manifestFile(name))).toBe(false);
    expect(await fs.readFile(manifestFile('local'), 'utf8')).toBe(localText);
    expect((await service.request('GET', `/servers/${local.body.id}`)).body.name).toBe('Local');

    const health = (await service.request('GET', '/health')).body;
    expect(health.status).toBe('degraded');
    expect(health.git_sync.manifests.problems).toHaveLength(4);
    expect(health.problems.join('\n')).toContain('servers/broken.yaml');
  });

  it('keeps a server running when its file in the repository turns invalid', async () => {
    const beta = await running('beta');
    const before = await fs.readFile(manifestFile('beta'), 'utf8');
    await commit(repo, { 'servers/beta.yaml': 'kind: EditorServer\nspec: {running: maybe}\n' });
    const answer = await sync();
    expect(answer.data.manifests.problems.map((p: { file: string }) => p.file)).toContain('servers/beta.yaml');
    expect(await fs.readFile(manifestFile('beta'), 'utf8')).toBe(before);
    expect((await server('beta')).pid).toBe(beta.pid);
    expect(processExists(beta.pid)).toBe(true);
  });

  it('deletes a server whose file is removed from the repository, as DELETE /servers/{id} does', async () => {
    await commit(repo, { 'servers/beta.yaml': manifest('beta', { running: true }) });
    await sync();
    const beta = await running('beta');
    const workspace = join(service.settings.dataDir, 'workspaces', 'beta');
    expect(existsSync(workspace)).toBe(true);

    await commit(repo, { 'servers/beta.yaml': null });
    const answer = await sync();
    expect(answer.data.manifests.servers).toEqual(['alpha']);
    await eventually(async () => (await service.request('GET', `/servers/${beta.id}`)).status === 404, 20_000);
    await eventually(() => !processExists(beta.pid), 10_000);
    expect(existsSync(manifestFile('beta'))).toBe(false);
    expect(existsSync(workspace)).toBe(false);
    expect(existsSync(join(service.settings.dataDir, 'editors', 'beta'))).toBe(false);
    // The servers the repository does not own are untouched.
    expect(existsSync(manifestFile('local'))).toBe(true);
  });

  it('reports an unreachable repository without stopping anything, and recovers when it is back', async () => {
    const alphaText = await fs.readFile(manifestFile('alpha'), 'utf8');
    await daemon.stop();
    try {
      const answer = await sync();
      expect(answer.data.manifests.last_error).toMatch(/unable to connect|Connection refused/i);
      const health = (await service.request('GET', '/health')).body;
      expect(health.status).toBe('degraded');
      expect(health.git_sync.manifests.last_error).toBe(answer.data.manifests.last_error);
      expect(health.problems.join('\n')).toMatch(/git sync of the manifests/);
      expect(await fs.readFile(manifestFile('alpha'), 'utf8')).toBe(alphaText);
      expect((await server('alpha'))).toBeDefined();
    } finally {
      daemon = await serveGitDaemon(join(base, 'repos'), daemon.port);
    }
    const pushed = await commit(repo, {
      'servers/alpha.yaml': manifest('alpha', { running: true, displayName: 'Alpha' }),
      'servers/broken.yaml': null, 'servers/misnamed.yaml': null, 'servers/wrong-kind.yaml': null, 'servers/local.yaml': null,
    });
    const answer = await sync();
    expect(answer.data.manifests).toMatchObject({ commit: pushed, last_error: null, problems: [] });
    await running('alpha');
    expect((await service.request('GET', '/health')).body.status).toBe('healthy');
  });
});

describe('POST /sync without repositories', () => {
  it('answers nulls and says how to configure them', async () => {
    const service = await startTestService();
    try {
      const answer = await service.request('POST', '/sync');
      expect(answer.status).toBe(200);
      expect(answer.body).toMatchObject({ status: 'success', data: { templates: null, manifests: null } });
      expect(answer.body.message).toMatch(/DEVBOX_MANIFESTS_GIT_URL/);
      expect((await service.request('GET', '/health')).body.git_sync).toEqual({ templates: null, manifests: null });
    } finally {
      await service.stop();
    }
  });
});

// The templates folder kept at a git repository's commit by the running service: a pushed commit
// shows after POST /sync, and within one interval without it. A person's folder of other files
// is never taken over: the service refuses to start and says what to change.
import { existsSync, promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSettings } from '../../src/config/settings.ts';
import { StartupError } from '../../src/service.ts';
import { eventually, startTestService, type TestService } from '../helpers/service.ts';
import { serveGitDaemon, type GitDaemon } from '../workspace/git-fixtures.ts';
import { commit, head, makeGitRepo } from './repos.ts';

/** An EditorServerTemplate file (schemas/editorservertemplate.schema.json). */
const template = (id: string) => [
  'apiVersion: devbox.dev/v1alpha1', 'kind: EditorServerTemplate', `metadata: { name: ${id} }`,
  `gallery: { name: ${id} from git, description: pushed to the catalog repository, tab: Git }`, 'spec: {}', '',
].join('\n');
const listedIds = async (service: TestService) => ((await service.request('GET', '/templates')).body.data.tabs as Array<{ items: Array<{ id: string }> }>)
  .flatMap((tab) => tab.items.map((item) => item.id)).sort();

describe('templates from a git repository', () => {
  let base: string;
  let repo: string;
  let daemon: GitDaemon;
  let service: TestService;

  beforeAll(async () => {
    base = await fs.mkdtemp(join(tmpdir(), 'devbox-gitops-templates-'));
    repo = await makeGitRepo(join(base, 'repos'), 'catalog', { 'python.yaml': template('python') });
    daemon = await serveGitDaemon(join(base, 'repos'));
    service = await startTestService({ gitSync: { templates: { url: daemon.url('catalog'), intervalSeconds: 1 } } });
  });
  afterAll(async () => {
    await service?.stop();
    await daemon?.stop();
    await fs.rm(base, { recursive: true, force: true });
  });

  const templateFile = (name: string) => join(service.settings.templatesDir, name);

  it('fills the templates folder with the repository\'s files, and reports the commit in GET /health', async () => {
    await eventually(() => existsSync(templateFile('python.yaml')), 15_000);
    expect(await fs.readFile(templateFile('python.yaml'), 'utf8')).toBe(template('python'));
    const health = (await service.request('GET', '/health')).body;
    expect(health.git_sync.templates).toMatchObject({ url: daemon.url('catalog'), ref: null, commit: head(repo), last_error: null, folder: service.settings.templatesDir });
    expect(health.git_sync.manifests).toBeNull();
    await eventually(async () => (await listedIds(service)).includes('python'), 10_000);
  });

  it('shows a pushed commit at once after POST /sync', async () => {
    const pushed = await commit(repo, { 'go.yaml': template('go'), 'python.yaml': null });
    const answer = await service.request('POST', '/sync');
    expect(answer.status).toBe(200);
    expect(answer.body.data.templates).toMatchObject({ commit: pushed, last_error: null });
    expect(answer.body.data.manifests).toBeNull();
    expect(await fs.readFile(templateFile('go.yaml'), 'utf8')).toBe(template('go'));
    expect(existsSync(templateFile('python.yaml'))).toBe(false);
    // The catalog watching the folder follows.
    await eventually(async () => JSON.stringify(await listedIds(service)) === '["go"]', 10_000);
  });

  it('shows a pushed commit within one interval without being asked', async () => {
    const pushed = await commit(repo, { 'rust.yaml': template('rust') });
    await eventually(() => existsSync(templateFile('rust.yaml')), 10_000);
    await eventually(async () => (await service.request('GET', '/health')).body.git_sync.templates.commit === pushed, 5_000);
  });
});

describe('the templates folder when a templates repository is set', () => {
  it('is the service\'s own checkout in the data folder when DEVBOX_TEMPLATES_DIR is unset', () => {
    const settings = loadSettings({ DEVBOX_DATA_DIR: '/srv/devbox', DEVBOX_TEMPLATES_GIT_URL: 'https://git.example/catalog.git' }, { readConfig: false });
    expect(settings.templatesDir).toBe('/srv/devbox/gitops/templates');
    const sub = loadSettings({ DEVBOX_DATA_DIR: '/srv/devbox', DEVBOX_TEMPLATES_GIT_URL: 'https://git.example/catalog.git', DEVBOX_TEMPLATES_GIT_PATH: 'devbox/templates/' }, { readConfig: false });
    expect(sub.templatesDir).toBe('/srv/devbox/gitops/templates/devbox/templates');
    expect(sub.gitSync.templates?.path).toBe('devbox/templates');
    expect(loadSettings({ DEVBOX_TEMPLATES_DIR: '/srv/mine', DEVBOX_TEMPLATES_GIT_URL: 'https://git.example/catalog.git' }, { readConfig: false }).templatesDir).toBe('/srv/mine');
  });

  it('is a folder inside the repository with DEVBOX_TEMPLATES_GIT_PATH', async () => {
    const root = await fs.mkdtemp(join(tmpdir(), 'devbox-gitops-path-'));
    const repos = join(root, 'repos');
    await makeGitRepo(repos, 'platform', { 'README.md': '# platform\n', 'devbox/templates/go.yaml': template('go') });
    const daemon = await serveGitDaemon(repos);
    const service = await startTestService({
      root, templatesDir: join(root, 'data', 'gitops', 'templates', 'devbox', 'templates'),
      gitSync: { templates: { url: daemon.url('platform'), path: 'devbox/templates', intervalSeconds: 60 } },
    });
    try {
      await eventually(async () => JSON.stringify(await listedIds(service)) === '["go"]', 15_000);
      expect((await service.request('GET', '/health')).body.git_sync.templates.folder).toBe(join(root, 'data', 'gitops', 'templates'));
    } finally {
      await service.stop();
      await daemon.stop();
    }
  });

  it('refuses to start over a folder of other files, saying what to change, and leaves the files alone', async () => {
    const root = await fs.mkdtemp(join(tmpdir(), 'devbox-gitops-refuse-'));
    try {
      const mine = join(root, 'my-templates');
      await fs.mkdir(mine);
      await fs.writeFile(join(mine, 'precious.yaml'), 'id: precious\n');
      const started = startTestService({ root, templatesDir: mine, gitSync: { templates: { url: 'git://127.0.0.1:9/catalog', intervalSeconds: 60 } } });
      const error = await started.then(async (service) => {
        await service.stop();
        return undefined;
      }, (e: unknown) => e);
      expect(error).toBeInstanceOf(StartupError);
      expect((error as Error).message).toMatch(/^DEVBOX_TEMPLATES_DIR: .*my-templates holds files and is not a git checkout.*: unset DEVBOX_TEMPLATES_DIR/);
      expect((error as Error).message).not.toContain('\n');
      expect(await fs.readFile(join(mine, 'precious.yaml'), 'utf8')).toBe('id: precious\n');
    } finally {
      await fs.rm(root, { recursive: true, force: true });
    }
  });

  it('starts while the repository cannot be reached, reporting it in GET /health', async () => {
    const service = await startTestService({ gitSync: { templates: { url: 'git://127.0.0.1:9/catalog', intervalSeconds: 60 } } });
    try {
      const health = await eventually(async () => {
        const body = (await service.request('GET', '/health')).body;
        return body.git_sync.templates.last_error ? body : undefined;
      });
      expect(health.status).toBe('degraded');
      expect(health.git_sync.templates).toMatchObject({ commit: null, last_sync_at: null });
      expect(health.problems.join('\n')).toMatch(/git sync of the templates from git:\/\/127\.0\.0\.1:9\/catalog: .*(unable to connect|refused)/i);
      expect((await service.request('GET', '/servers')).status).toBe(200);
    } finally {
      await service.stop();
    }
  });

  it('refuses to start with a URL or ref the rules refuse', async () => {
    const root = await fs.mkdtemp(join(tmpdir(), 'devbox-gitops-refuse-'));
    try {
      for (const [templates, problem] of [
        [{ url: '--upload-pack=touch /tmp/x', intervalSeconds: 60 }, /^DEVBOX_TEMPLATES_GIT_URL: .*starts with "-"/],
        [{ url: 'git://127.0.0.1:9/catalog', ref: 'main:refs/heads/x', intervalSeconds: 60 }, /^DEVBOX_TEMPLATES_GIT_REF: /],
      ] as const) {
        const error = await startTestService({ root, gitSync: { templates } }).then(async (service) => {
          await service.stop();
          return undefined;
        }, (e: unknown) => e);
        expect(error).toBeInstanceOf(StartupError);
        expect((error as Error).message).toMatch(problem);
      }
    } finally {
      await fs.rm(root, { recursive: true, force: true });
    }
  });
});

// Git workspace sources: a manifest's spec.workspace.source.git is cloned once into the empty
// workspace by the controller, from real repositories made here and served as file:// and by
// `git daemon` on loopback. Failures leave the workspace empty and are retried.
import { existsSync, promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { defaultGitSchemes, gitUrlProblem } from '../../src/workspace/git-source.ts';
import { eventually, startTestService, type TestService } from '../helpers/service.ts';
import { freePort, makeRepo, serveGitDaemon, type GitDaemon } from './git-fixtures.ts';

describe('gitUrlProblem', () => {
  const local = defaultGitSchemes(true);
  const deployed = defaultGitSchemes(false);
  it.each([
    'https://github.com/coder/code-server.git',
    'ssh://git@example.com/team/repo.git',
    'git@example.com:team/repo.git',
    'git://127.0.0.1:9418/repo',
  ])('allows %s', (url) => {
    expect(gitUrlProblem(url, deployed)).toBeUndefined();
  });
  it.each([
    ['--upload-pack=touch /tmp/x', /starts with "-"/],
    ['-uhttps://example.com/x', /starts with "-"/],
    ['ext::sh -c touch% /tmp/x', /transport "ext::"/],
    ['fd::3', /transport "fd::"/],
    ['http://example.com/repo.git', /scheme "http" is not allowed/],
    ['file:///srv/repo', /scheme "file" is not allowed/],
    ['ftp://example.com/repo', /scheme "ftp" is not allowed/],
    ['not a url', /whitespace/],
    ['just-words', /does not parse/],
    ['https://', /does not parse|names no host/],
    ['ssh://-oProxyCommand=x/repo', /host starting with "-"/],
  ])('refuses %s', (url, problem) => {
    expect(gitUrlProblem(url, deployed)).toMatch(problem);
  });
  it('allows http and file locally only', () => {
    expect(gitUrlProblem('file:///srv/repo', local)).toBeUndefined();
    expect(gitUrlProblem('http://127.0.0.1:8080/repo.git', local)).toBeUndefined();
  });
});

describe('cloning a git source into the workspace', () => {
  let service: TestService;
  let repos: string;
  let daemon: GitDaemon;

  beforeAll(async () => {
    repos = await fs.mkdtemp(join(tmpdir(), 'devbox-repos-'));
    await makeRepo(repos, 'project');
    daemon = await serveGitDaemon(repos);
    service = await startTestService();
  });
  afterAll(async () => {
    await service?.stop();
    await daemon?.stop();
    await fs.rm(repos, { recursive: true, force: true });
  });

  const writeManifest = (name: string, source: string[], running = true) => fs.writeFile(
    join(service.settings.manifestsDir, `${name}.yaml`),
    ['apiVersion: devbox.dev/v1alpha1', 'kind: EditorServer', `metadata: { name: ${name} }`, 'spec:', `  running: ${running}`,
      '  workspace:', '    source:', ...source.map((l) => `      ${l}`), ''].join('\n'),
  );
  const statusOf = async (name: string) =>
    parse(await fs.readFile(join(service.settings.dataDir, 'status', `${name}.yaml`), 'utf8')).status;
  const workspaceReady = (status: { conditions?: Array<{ type: string }> }) => status.conditions?.find((c) => c.type === 'WorkspaceReady') as
    { status: string; reason: string; message?: string } | undefined;
  const workspace = (name: string) => join(service.settings.dataDir, 'workspaces', name);

  it('clones a file:// repository before the editor starts, once', async () => {
    await writeManifest('from-file', ['git:', `  url: file://${repos}/project`]);
    const status = await eventually(async () => {
      const s = await statusOf('from-file');
      return s.phase === 'Running' ? s : undefined;
    }, 20_000);
    expect(workspaceReady(status)).toMatchObject({ status: 'True', reason: 'Populated' });
    expect(await fs.readFile(join(workspace('from-file'), 'README.md'), 'utf8')).toBe('# project\n');
    expect(await fs.readFile(join(workspace('from-file'), 'src', 'main.py'), 'utf8')).toContain('hello');
    expect(existsSync(join(workspace('from-file'), 'notes.txt'))).toBe(false);
    expect((await fs.stat(workspace('from-file'))).mode & 0o777).toBe(0o700);
    // No clone folder is left beside the workspace.
    expect((await fs.readdir(join(service.settings.dataDir, 'workspaces'))).filter((f) => f.startsWith('.'))).toEqual([]);
    const log = await fs.readFile(join(service.settings.dataDir, 'logs', 'from-file', 'server.log'), 'utf8');
    expect(log).toMatch(/cloning file:\/\/.*project/);
    expect(log).toMatch(/cloned file:\/\/.*project in/);

    // Applied once: work done in the workspace is never replaced by a new clone.
    await fs.writeFile(join(workspace('from-file'), 'mine.txt'), 'my work');
    await fs.rm(join(workspace('from-file'), 'README.md'));
    await service.controller.reconcileNow('from-file');
    expect(service.controller.operations.get('from-file', 'workspace source')).toBeUndefined();
    expect(existsSync(join(workspace('from-file'), 'README.md'))).toBe(false);
    expect(await fs.readFile(join(workspace('from-file'), 'mine.txt'), 'utf8')).toBe('my work');
  });

  it('clones a ref with a depth from git daemon on loopback', async () => {
    await writeManifest('from-daemon', ['git:', `  url: ${daemon.url('project')}`, '  ref: feature', '  depth: 1'], false);
    await eventually(async () => (await statusOf('from-daemon')).phase === 'Stopped', 20_000);
    expect(await fs.readFile(join(workspace('from-daemon'), 'notes.txt'), 'utf8')).toBe('on feature\n');
    expect(await fs.readFile(join(workspace('from-daemon'), '.git', 'shallow'), 'utf8')).toMatch(/^[0-9a-f]{40}\n$/);
  });

  it('leaves the workspace empty when the clone fails, says why, and retries until it works', async () => {
    const port = await freePort();
    await writeManifest('retried', ['git:', `  url: git://127.0.0.1:${port}/project`]);
    const failed = await eventually(async () => {
      const s = await statusOf('retried');
      return s.reason === 'WorkspaceSourceFailed' ? s : undefined;
    }, 20_000);
    expect(failed.phase).toBe('Failed');
    expect(workspaceReady(failed)).toMatchObject({ status: 'False', reason: 'CloneFailed' });
    expect(workspaceReady(failed)!.message).toMatch(/unable to connect|Connection refused/i);
    expect(failed.pid ?? null).toBeNull();
    expect(await fs.readdir(workspace('retried'))).toEqual([]);

    // The network comes back: the next try (backoff 1 s, 2 s, …) clones and the editor starts.
    const late = await serveGitDaemon(repos, port);
    try {
      const status = await eventually(async () => {
        const s = await statusOf('retried');
        return s.phase === 'Running' ? s : undefined;
      }, 30_000);
      expect(workspaceReady(status)).toMatchObject({ status: 'True' });
      expect(await fs.readFile(join(workspace('retried'), 'README.md'), 'utf8')).toBe('# project\n');
    } finally {
      await late.stop();
    }
  });
});

describe('a git scheme the config does not allow', () => {
  let service: TestService;
  afterAll(async () => {
    await service?.stop();
  });
  it('is a terminal error in status, and nothing is cloned', async () => {
    service = await startTestService({ config: { workspace: { gitSchemes: ['https'], cloneTimeoutSeconds: 60, maxUploadMb: 100 } } });
    await fs.writeFile(join(service.settings.manifestsDir, 'refused.yaml'), [
      'apiVersion: devbox.dev/v1alpha1', 'kind: EditorServer', 'metadata: { name: refused }', 'spec:', '  running: true',
      '  workspace: { source: { git: { url: "file:///etc" } } }', ''].join('\n'));
    const status = await eventually(async () => {
      const s = parse(await fs.readFile(join(service.settings.dataDir, 'status', 'refused.yaml'), 'utf8')).status;
      return s.phase === 'Failed' ? s : undefined;
    });
    expect(status.reason).toBe('WorkspaceSourceInvalid');
    expect(status.message).toMatch(/scheme "file" is not allowed here: use a URL with one of: https:\/\//);
    expect(await fs.readdir(join(service.settings.dataDir, 'workspaces', 'refused'))).toEqual([]);
  });
});

describe('after a service that died mid-clone', () => {
  let service: TestService;
  let repos: string;
  afterAll(async () => {
    await service?.stop();
    await fs.rm(repos, { recursive: true, force: true });
  });
  it('removes the half-made clone folder and clones again into the empty workspace', async () => {
    repos = await fs.mkdtemp(join(tmpdir(), 'devbox-repos-'));
    await makeRepo(repos, 'project');
    const root = await fs.mkdtemp(join(tmpdir(), 'devbox-test-'));
    const leftover = join(root, 'data', 'workspaces', '.again.clone-0123abcd');
    await fs.mkdir(join(leftover, '.git'), { recursive: true });
    await fs.mkdir(join(root, 'data', 'workspaces', 'again'), { recursive: true });
    service = await startTestService({ root });
    await fs.writeFile(join(service.settings.manifestsDir, 'again.yaml'), [
      'apiVersion: devbox.dev/v1alpha1', 'kind: EditorServer', 'metadata: { name: again }', 'spec:', '  running: false',
      `  workspace: { source: { git: { url: "file://${repos}/project" } } }`, ''].join('\n'));
    await eventually(() => existsSync(join(root, 'data', 'workspaces', 'again', 'README.md')), 20_000);
    expect(existsSync(leftover)).toBe(false);
  });
});

describe('a source added while extension installs run', () => {
  let service: TestService;
  let repos: string;
  afterAll(async () => {
    await service?.stop();
    await fs.rm(repos, { recursive: true, force: true });
  });
  it('waits for the installs to end (one operation per server at a time), then clones', async () => {
    repos = await fs.mkdtemp(join(tmpdir(), 'devbox-repos-'));
    await makeRepo(repos, 'project');
    service = await startTestService();
    let finishInstalls!: () => void;
    const installs = new Promise<void>((resolve) => { finishInstalls = resolve; });
    service.controller.operations.start('queued', 'extension installs', 'test', new Map(), () => installs, 'installing');
    await fs.writeFile(join(service.settings.manifestsDir, 'queued.yaml'), [
      'apiVersion: devbox.dev/v1alpha1', 'kind: EditorServer', 'metadata: { name: queued }', 'spec:', '  running: false',
      `  workspace: { source: { git: { url: "file://${repos}/project" } } }`, ''].join('\n'));
    const workspace = join(service.settings.dataDir, 'workspaces', 'queued');
    // Seen: its log has the controller's first event.
    await eventually(async () => {
      const listed = (await service.request('GET', '/servers')).body.find((s: { manifest: string }) => s.manifest === 'queued');
      return listed && (await service.request('GET', `/servers/${listed.id}/logs`)).body.data.logs.join('\n').includes('created');
    });
    expect(await fs.readdir(workspace)).toEqual([]);
    finishInstalls();
    await eventually(() => existsSync(join(workspace, 'README.md')), 20_000);
    expect(service.lines.join('\n')).not.toMatch(/still running/);
  });
});

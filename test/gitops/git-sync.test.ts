// GitSync against real repositories served by `git daemon` on loopback: a folder cloned once and
// moved to the ref's commit at each sync; failures (unreachable, unknown ref, a stalled server)
// reported and the last good checkout kept.
import { existsSync, promises as fs } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { checkoutProblem, GitSync, maskUrl, publicUrl, refProblem } from '../../src/gitops/git-sync.ts';
import { defaultGitSchemes } from '../../src/workspace/git-source.ts';
import { eventually } from '../helpers/wait.ts';
import { serveGitDaemon, type GitDaemon } from '../workspace/git-fixtures.ts';
import { serveGitHttp, type GitHttpServer } from './http-backend.ts';
import { commit, head, makeGitRepo } from './repos.ts';

describe('what a git sync may be given', () => {
  it('masks the password or token of a URL', () => {
    expect(maskUrl('https://bot:s3cret-token@git.example/team/fleet.git')).toBe('https://bot:***@git.example/team/fleet.git');
    expect(maskUrl('https://ghp_abcdef123456@github.com/team/fleet')).toBe('https://***@github.com/team/fleet');
    expect(maskUrl('git@github.com:team/fleet.git')).toBe('git@github.com:team/fleet.git');
    expect(maskUrl('ssh://git@github.com/team/fleet.git')).toBe('ssh://git@github.com/team/fleet.git');
  });

  it('keeps the URL the checkout records free of secrets', () => {
    expect(publicUrl('https://bot:s3cret@git.example/fleet.git')).toBe('https://git.example/fleet.git');
    expect(publicUrl('https://ghp_abcdef123456@git.example/fleet.git')).toBe('https://git.example/fleet.git');
    expect(publicUrl('ssh://git:pw@git.example/fleet.git')).toBe('ssh://git@git.example/fleet.git');
  });

  it.each(['main', 'release/1.2', 'v1.2.3', 'a3f9c2d1e0b4a3f9c2d1e0b4a3f9c2d1e0b4a3f9'])('follows the ref %s', (ref) => {
    expect(refProblem(ref)).toBeUndefined();
  });

  it.each(['--upload-pack=x', 'main:refs/heads/x', 'HEAD~1', 'a..b', 'main^{tree}', '*', 'x y', 'feature/'])('refuses the ref %s', (ref) => {
    expect(refProblem(ref)).toMatch(/not a branch, tag or commit name/);
  });

  it('refuses a URL the workspace rules refuse', () => {
    const options = { ref: undefined, intervalMs: 1000, folder: '/nowhere', timeoutMs: 1000, what: 'test', log: () => undefined };
    expect(() => new GitSync({ ...options, url: '--upload-pack=touch /tmp/x', schemes: defaultGitSchemes(true) })).toThrow(/starts with "-"/);
    expect(() => new GitSync({ ...options, url: 'ext::sh -c x', schemes: defaultGitSchemes(true) })).toThrow(/transport "ext::"/);
    expect(() => new GitSync({ ...options, url: 'file:///srv/repo', schemes: defaultGitSchemes(false) })).toThrow(/scheme "file" is not allowed/);
  });
});

describe('GitSync', () => {
  let base: string;
  let repo: string;
  let daemon: GitDaemon;
  const syncs: GitSync[] = [];
  const lines: string[] = [];

  beforeAll(async () => {
    base = await fs.mkdtemp(join(tmpdir(), 'devbox-gitsync-'));
    repo = await makeGitRepo(join(base, 'repos'), 'catalog', { 'python.yaml': 'id: python\n', 'old.yaml': 'id: old\n' });
    daemon = await serveGitDaemon(join(base, 'repos'));
  });
  afterEach(async () => {
    for (const sync of syncs.splice(0)) await sync.dispose();
  });
  afterAll(async () => {
    await daemon?.stop();
    await fs.rm(base, { recursive: true, force: true });
  });

  const make = (folder: string, more: { url?: string; ref?: string; intervalMs?: number; timeoutMs?: number } = {}) => {
    const sync = new GitSync({
      url: more.url ?? daemon.url('catalog'), ref: more.ref, intervalMs: more.intervalMs ?? 3_600_000, folder,
      schemes: defaultGitSchemes(true), timeoutMs: more.timeoutMs ?? 20_000, what: 'test', log: (line) => lines.push(line),
    });
    syncs.push(sync);
    return sync;
  };

  it('clones into the folder, then follows new commits, leaving no files the repository dropped', async () => {
    const folder = join(base, 'follow');
    const sync = make(folder);
    const first = await sync.syncNow();
    expect(first).toMatchObject({ commit: head(repo), last_error: null, ref: null, url: daemon.url('catalog') });
    expect(first.next_sync_at).not.toBeNull();
    expect(await fs.readFile(join(folder, 'python.yaml'), 'utf8')).toBe('id: python\n');
    expect(await checkoutProblem(folder, daemon.url('catalog'))).toBeUndefined();

    const second = await commit(repo, { 'go.yaml': 'id: go\n', 'old.yaml': null });
    expect((await sync.syncNow()).commit).toBe(second);
    expect(await fs.readFile(join(folder, 'go.yaml'), 'utf8')).toBe('id: go\n');
    expect(existsSync(join(folder, 'old.yaml'))).toBe(false);
    // Clone folders beside it are gone.
    expect((await fs.readdir(base)).filter((e) => e.includes('.clone-'))).toEqual([]);
  });

  it('syncs again every interval without being asked', async () => {
    const folder = join(base, 'interval');
    const sync = make(folder, { intervalMs: 300 });
    sync.start();
    await eventually(() => sync.state().commit === head(repo), 15_000);
    const next = await commit(repo, { 'rust.yaml': 'id: rust\n' });
    await eventually(() => existsSync(join(folder, 'rust.yaml')) && sync.state().commit === next, 15_000);
  });

  it('runs one sync at a time: syncs asked for meanwhile wait and all see the last commit', async () => {
    const folder = join(base, 'concurrent');
    const sync = make(folder);
    const latest = await commit(repo, { 'java.yaml': 'id: java\n' });
    const states = await Promise.all([sync.syncNow(), sync.syncNow(), sync.syncNow()]);
    expect(states.map((s) => s.commit)).toEqual([latest, latest, latest]);
    expect(states.every((s) => s.last_error === null)).toBe(true);
  });

  it('follows a branch or a tag given as ref; an unknown ref is reported and the checkout kept', async () => {
    const git = (await import('node:child_process')).execFileSync;
    git('git', ['branch', '-f', 'stable', 'HEAD~1'], { cwd: repo });
    git('git', ['tag', '-f', 'v1', 'HEAD'], { cwd: repo });
    const folder = join(base, 'refs');
    const stable = await make(folder, { ref: 'stable' }).syncNow();
    expect(stable.commit).toBe(git('git', ['rev-parse', 'stable'], { cwd: repo }).toString().trim());
    expect(existsSync(join(folder, 'java.yaml'))).toBe(false);

    const tagged = await make(folder, { ref: 'v1' }).syncNow();
    expect(tagged.commit).toBe(head(repo));

    const unknown = await make(folder, { ref: 'no-such-branch' }).syncNow();
    expect(unknown.last_error).toMatch(/no-such-branch/);
    expect(unknown.commit).toBeNull(); // this one never synced …
    expect(existsSync(join(folder, 'java.yaml'))).toBe(true); // … and the folder keeps the last good checkout
  });

  it('reports an unreachable repository without its password, keeps the folder, and recovers', async () => {
    const folder = join(base, 'unreachable');
    const sync = make(folder);
    const good = await sync.syncNow();
    await daemon.stop();
    try {
      const failed = await sync.syncNow();
      expect(failed.last_error).toMatch(/unable to connect|Connection refused/i);
      expect(failed.commit).toBe(good.commit);
      expect(failed.last_sync_at).toBe(good.last_sync_at);
      expect(await fs.readFile(join(folder, 'python.yaml'), 'utf8')).toBe('id: python\n');
    } finally {
      daemon = await serveGitDaemon(join(base, 'repos'), daemon.port);
    }
    const back = await sync.syncNow();
    expect(back.last_error).toBeNull();

    const secret = make(join(base, 'secret'), { url: `http://bot:sup3r-s3cret@127.0.0.1:${daemon.port + 1}/catalog` });
    const state = await secret.syncNow();
    expect(state.url).toBe(`http://bot:***@127.0.0.1:${daemon.port + 1}/catalog`);
    expect(state.last_error).toBeTruthy();
    expect(JSON.stringify(state) + lines.join('\n')).not.toContain('sup3r-s3cret');
    expect(existsSync(join(base, 'secret'))).toBe(false);
  });

  it('stops git after the timeout when the server never answers', async () => {
    const sockets = new Set<Socket>();
    const silent: Server = createServer((socket) => {
      sockets.add(socket); // accepts, reads, says nothing
      socket.resume();
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = silent.address() as { port: number };
      const state = await make(join(base, 'silent'), { url: `git://127.0.0.1:${port}/catalog`, timeoutMs: 1000 }).syncNow();
      expect(state.last_error).toMatch(/longer than 1 s and was stopped/);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});

describe('GitSync over HTTP with a token in the URL', () => {
  let base: string;
  let repo: string;
  let http: GitHttpServer;
  const syncs: GitSync[] = [];
  const lines: string[] = [];

  beforeAll(async () => {
    base = await fs.mkdtemp(join(tmpdir(), 'devbox-gitsync-http-'));
    repo = await makeGitRepo(join(base, 'repos'), 'catalog', { 'python.yaml': 'id: python\n' });
    http = await serveGitHttp(join(base, 'repos'), 'bot:s3cret-token-42');
  });
  afterAll(async () => {
    for (const sync of syncs) await sync.dispose();
    await http?.stop();
    await fs.rm(base, { recursive: true, force: true });
  });

  const make = (folder: string, url: string) => {
    const sync = new GitSync({ url, intervalMs: 3_600_000, folder, schemes: defaultGitSchemes(true), timeoutMs: 20_000, what: 'test', log: (line) => lines.push(line) });
    syncs.push(sync);
    return sync;
  };

  it('syncs, shows the URL masked, and writes the token nowhere on disk', async () => {
    const folder = join(base, 'with-token');
    const state = await make(folder, http.url('catalog', 'bot:s3cret-token-42')).syncNow();
    expect(state).toMatchObject({ commit: head(repo), last_error: null, url: http.url('catalog', 'bot:***') });
    expect(await fs.readFile(join(folder, 'python.yaml'), 'utf8')).toBe('id: python\n');
    expect(await fs.readFile(join(folder, '.git', 'config'), 'utf8')).not.toContain('s3cret');
    expect(await checkoutProblem(folder, http.url('catalog', 'bot:s3cret-token-42'))).toBeUndefined();
  });

  it('fails at once with a wrong token, asking nobody, and says so without the token', async () => {
    const started = performance.now();
    const state = await make(join(base, 'wrong-token'), http.url('catalog', 'bot:wrong-token-99')).syncNow();
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(state.last_error).toMatch(/Authentication failed|401|could not read/i);
    expect(JSON.stringify(state) + lines.join('\n')).not.toContain('wrong-token-99');
    const anonymous = await make(join(base, 'no-token'), http.url('catalog')).syncNow();
    expect(anonymous.last_error).toMatch(/Authentication failed|401|could not read|terminal prompts disabled/i);
  });
});

// One folder kept at the commit of a git repository's ref (GitOps): cloned once, then fetched
// every interval and moved to the ref's commit, detached and hard. The URL gets the workspace
// sources' rules (allowed schemes, no option injection, after `--`, no prompts); a failure keeps
// the last good checkout, is reported in state, and is tried again at the next interval.
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { SimpleGit } from 'simple-git';
import { realClock, type Clock } from '../core/clock.ts';
import { gitEnv, gitUrlProblem, loadSimpleGit } from '../workspace/git-source.ts';

/** What GET /health and POST /sync show of one repository. */
export interface GitSyncState {
  /** The URL, with any password or token in it masked. */
  url: string;
  /** The ref followed; null: the repository's default branch. */
  ref: string | null;
  /** The folder kept at the commit. */
  folder: string;
  /** The commit checked out; null until the first sync has worked. */
  commit: string | null;
  /** When a sync last worked (ISO time). */
  last_sync_at: string | null;
  /** Why the last sync failed, or null when it worked. */
  last_error: string | null;
  /** When the next sync runs (ISO time); null while one runs or once disposed. */
  next_sync_at: string | null;
}

export interface GitSyncOptions {
  url: string;
  ref?: string;
  intervalMs: number;
  /** The folder kept at the ref's commit: made by the first sync (it may exist empty). */
  folder: string;
  /** Allowed URL schemes (config.workspace.gitSchemes, else defaultGitSchemes). */
  schemes: readonly string[];
  /** Bound of one sync, git and afterSync together. */
  timeoutMs: number;
  /**
   * Runs after every fetch and checkout that worked, within the same sync (so never twice at
   * once): the manifests mirror. A throw counts as the sync failing.
   */
  afterSync?: (commit: string) => Promise<void>;
  /** Names the repository in log lines, such as "templates". */
  what: string;
  log: (message: string) => void;
  clock?: Clock;
}

/**
 * Why `ref` cannot be followed, or undefined. A ref reaches git's command line: it may not be an
 * option, a refspec (`a:b` would write local refs) or a revision expression.
 */
export function refProblem(ref: string): string | undefined {
  if (ref.length > 255 || !/^[A-Za-z0-9_][A-Za-z0-9._/-]*$/.test(ref) || ref.includes('..') || ref.includes('//') || ref.endsWith('/') || ref.endsWith('.lock')) {
    return `"${ref}" is not a branch, tag or commit name git accepts here: give a name such as main, v1.2 or a commit id (letters, digits, ".", "_", "-", "/")`;
  }
  return undefined;
}

/** The URL with its password (or token) shown as "***", for logs, state and messages. */
export function maskUrl(url: string): string {
  const match = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/)([^@/]*)@/.exec(url);
  if (!match) return url;
  const [user, password] = match[2].split(':', 2);
  // A user alone is a token over http(s) (https://TOKEN@host), and a plain name over ssh (git@host).
  if (password === undefined && !/^https?:/i.test(url)) return url;
  const shown = password === undefined ? '***' : `${user}:***`;
  return `${match[1]}${shown}@${url.slice(match[0].length)}`;
}

/**
 * The URL without its secret, as the checkout records it (origin): a password goes, and over
 * http(s) a user name too (a token). The full URL is given to git at each fetch, never stored.
 */
export function publicUrl(url: string): string {
  const match = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/)([^@/]*)@/.exec(url);
  if (!match) return url;
  const rest = url.slice(match[0].length);
  if (/^https?:/i.test(url)) return match[1] + rest;
  return `${match[1]}${match[2].split(':', 1)[0]}@${rest}`;
}

/**
 * Why the folder may not be made a checkout of `url`, or undefined when it may: it is missing,
 * empty, or already a git checkout whose origin is that URL. Never changes the folder.
 */
export async function checkoutProblem(folder: string, url: string): Promise<string | undefined> {
  const entries = await fs.readdir(folder).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return [];
    throw error;
  });
  if (entries.length === 0) return undefined;
  const origin = await originOf(folder);
  if (origin !== undefined && publicUrl(origin) === publicUrl(url)) return undefined;
  return origin === undefined
    ? `${folder} holds files and is not a git checkout`
    : `${folder} is a git checkout of ${maskUrl(origin)}, not of ${maskUrl(url)}`;
}

/** The folder's own origin URL (not that of a repository above it), or undefined. */
async function originOf(folder: string): Promise<string | undefined> {
  const config = await fs.readFile(join(folder, '.git', 'config'), 'utf8').catch(() => undefined);
  if (config === undefined) return undefined;
  // [remote "origin"] ... url = <url>, as git writes it.
  const section = /\[remote "origin"\]([^[]*)/.exec(config)?.[1];
  return section ? /^\s*url\s*=\s*(.+?)\s*$/m.exec(section)?.[1] : undefined;
}

export class GitSync {
  private readonly options: GitSyncOptions;
  private readonly clock: Clock;
  private commit: string | undefined;
  private lastSyncAt: number | undefined;
  private lastError: string | undefined;
  private nextAt: number | undefined;
  private timer: unknown;
  /** The sync under way, and at most one asked for while it runs. */
  private current: Promise<void> | undefined;
  private queued: Promise<void> | undefined;
  private abort: AbortController | undefined;
  private disposed = false;
  private staleRemoved = false;

  constructor(options: GitSyncOptions) {
    const problem = gitUrlProblem(options.url, options.schemes) ?? (options.ref === undefined ? undefined : refProblem(options.ref));
    if (problem) throw new Error(problem);
    this.options = options;
    this.clock = options.clock ?? realClock;
  }

  /** Syncs now, then every interval. */
  start(): void {
    void this.request();
  }

  /** Syncs now (after the sync under way, if any) and resolves with the state once done. */
  async syncNow(): Promise<GitSyncState> {
    await this.request();
    return this.state();
  }

  state(): GitSyncState {
    const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());
    return {
      url: maskUrl(this.options.url),
      ref: this.options.ref ?? null,
      folder: this.options.folder,
      commit: this.commit ?? null,
      last_sync_at: iso(this.lastSyncAt),
      last_error: this.lastError ?? null,
      next_sync_at: iso(this.nextAt),
    };
  }

  /** Stops the timer and the sync under way (git is killed), and waits for it. */
  async dispose(): Promise<void> {
    this.disposed = true;
    this.clock.clearTimeout(this.timer);
    this.nextAt = undefined;
    this.abort?.abort(new Error('the service is stopping'));
    await this.current?.catch(() => undefined);
    await this.queued?.catch(() => undefined);
  }

  private request(): Promise<void> {
    if (this.disposed) return Promise.resolve();
    if (!this.current) return this.begin();
    this.queued ??= this.current.then(() => {
      this.queued = undefined;
      return this.disposed ? undefined : this.begin();
    });
    return this.queued;
  }

  private begin(): Promise<void> {
    const run: Promise<void> = this.run().finally(() => {
      if (this.current === run) this.current = undefined;
    });
    this.current = run;
    return run;
  }

  private async run(): Promise<void> {
    this.clock.clearTimeout(this.timer);
    this.nextAt = undefined;
    const abort = new AbortController();
    this.abort = abort;
    const { timeoutMs, what } = this.options;
    const signal = AbortSignal.any([abort.signal, AbortSignal.timeout(timeoutMs)]);
    try {
      const commit = await this.fetchAndCheckout(signal);
      if (commit !== this.commit) this.options.log(`${what}: ${this.options.folder} is at ${commit.slice(0, 12)} of ${this.describe()}`);
      this.commit = commit;
      await this.options.afterSync?.(commit);
      if (this.lastError !== undefined) this.options.log(`${what}: syncing ${this.describe()} works again`);
      this.lastError = undefined;
      this.lastSyncAt = this.clock.now();
    } catch (error) {
      const message = signal.aborted && !abort.signal.aborted
        ? `git took longer than ${Math.round(timeoutMs / 1000)} s and was stopped; the folder stays at the last commit synced: check that the repository can be reached`
        : this.scrub(error);
      if (message !== this.lastError && !this.disposed) {
        this.options.log(`${what}: syncing ${this.describe()} failed, kept ${this.commit ? `commit ${this.commit.slice(0, 12)}` : 'nothing yet'} and trying again in ${this.options.intervalMs / 1000} s: ${message}`);
      }
      this.lastError = message;
    } finally {
      this.abort = undefined;
      this.schedule();
    }
  }

  private schedule(): void {
    if (this.disposed || this.queued) return;
    const { intervalMs } = this.options;
    this.nextAt = this.clock.now() + intervalMs;
    this.timer = this.clock.setTimeout(() => void this.request(), intervalMs);
  }

  private async fetchAndCheckout(signal: AbortSignal): Promise<string> {
    const { folder, url } = this.options;
    if (!this.staleRemoved) {
      await removeStaleClones(folder);
      this.staleRemoved = true;
    }
    const origin = await originOf(folder);
    if (origin === undefined) return this.cloneInto(folder, signal);
    const git = await this.git(folder, signal);
    // Our own checkout of an earlier URL (a person's folder of another URL is refused at start-up).
    if (publicUrl(origin) !== publicUrl(url)) await git.raw(['remote', 'set-url', '--', 'origin', publicUrl(url)]);
    return this.checkout(git);
  }

  /** Fetches the ref alone and moves the work tree to its commit; untracked files go, ignored ones stay. */
  private async checkout(git: SimpleGit): Promise<string> {
    await git.raw(['fetch', '--quiet', '--force', '--no-tags', '--no-recurse-submodules', '--', this.options.url, this.options.ref ?? 'HEAD']);
    const commit = (await git.raw(['rev-parse', '--verify', '--end-of-options', 'FETCH_HEAD^{commit}'])).trim();
    if (!/^[0-9a-f]{40,64}$/.test(commit)) throw new Error(`git named the fetched commit "${commit}", which is not a commit id`);
    await git.raw(['checkout', '--quiet', '--force', '--detach', commit]);
    await git.raw(['clean', '-q', '-f', '-f', '-d']);
    return commit;
  }

  /**
   * The first sync: a repository made in a folder beside the target, which takes the target's
   * place only once checked out, so a failure leaves nothing half-made. An empty target folder
   * keeps its inode (a watcher on it sees the files arrive).
   */
  private async cloneInto(folder: string, signal: AbortSignal): Promise<string> {
    await fs.mkdir(dirname(folder), { recursive: true });
    const temp = join(dirname(folder), `.${basename(folder)}.clone-${randomBytes(4).toString('hex')}`);
    try {
      await (await this.git(dirname(folder), signal)).raw(['init', '--quiet', temp]);
      const git = await this.git(temp, signal);
      await git.raw(['remote', 'add', '--', 'origin', publicUrl(this.options.url)]);
      const commit = await this.checkout(git);
      const entries = await fs.readdir(folder).catch((error: NodeJS.ErrnoException) => {
        if (error.code === 'ENOENT') return undefined;
        throw error;
      });
      if (entries === undefined) {
        await fs.rename(temp, folder);
      } else {
        if (entries.length > 0) throw new Error(`${folder} filled up with other files meanwhile: empty it, or point the setting at another folder`);
        for (const entry of await fs.readdir(temp)) await fs.rename(join(temp, entry), join(folder, entry));
      }
      return commit;
    } finally {
      await fs.rm(temp, { recursive: true, force: true });
    }
  }

  private async git(baseDir: string, abort: AbortSignal): Promise<SimpleGit> {
    const env = gitEnv(this.options.schemes);
    const simpleGit = await loadSimpleGit();
    return simpleGit({
      baseDir, abort,
      // A credential helper may answer, but never ask anyone (Git Credential Manager honours this).
      config: ['credential.interactive=false'],
      allowEnvironment: Object.keys(env).filter((key) => key.startsWith('GIT_') || key.startsWith('SSH_')),
      unsafe: { allowUnsafeAskPass: true, allowUnsafeSshCommand: true },
    }).env(env);
  }

  private describe(): string {
    return `${maskUrl(this.options.url)} (${this.options.ref ?? 'default branch'})`;
  }

  /** git's own words, on one line, with the URL's secret masked. */
  private scrub(error: unknown): string {
    const raw = String((error as Error)?.message ?? error);
    const { url } = this.options;
    const masked = raw.split(url).join(maskUrl(url));
    // The secret alone too (git may print the URL rewritten); a short one could be any word.
    const secret = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/([^@/]*)@/.exec(url)?.[1]?.split(':').pop();
    const clean = secret && secret.length >= 6 ? masked.split(secret).join('***') : masked;
    return clean.split('\n').map((line) => line.trim()).filter(Boolean).join('; ').slice(0, 1000) || 'git failed without saying why';
  }
}

/** Clone folders a service that died mid-way left beside the target. */
async function removeStaleClones(folder: string): Promise<void> {
  const prefix = `.${basename(folder)}.clone-`;
  for (const entry of await fs.readdir(dirname(folder)).catch(() => [] as string[])) {
    if (entry.startsWith(prefix)) await fs.rm(join(dirname(folder), entry), { recursive: true, force: true });
  }
}

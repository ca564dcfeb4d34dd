// GitOps: the templates folder and the manifests kept in sync with git repositories by the
// service itself (DEVBOX_TEMPLATES_GIT_URL, DEVBOX_MANIFESTS_GIT_URL). Checked at start-up, synced
// every interval or at once (POST /sync), reported in GET /health's git_sync section.
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import type { GitSyncSettings, Settings } from '../config/settings.ts';
import type { ManifestStore } from '../manifests/store.ts';
import type { HealthSection } from '../core/health-section.ts';
import { gitUrlProblem } from '../workspace/git-source.ts';
import { checkoutProblem, GitSync, maskUrl, refProblem, type GitSyncState } from './git-sync.ts';
import { ManifestsMirror, type RepoFileProblem } from './manifests-mirror.ts';

export { maskUrl, type GitSyncState };

/** The manifests repository's state, with the servers it owns and the files it skipped. */
export type ManifestsSyncState = GitSyncState & { servers: string[]; problems: RepoFileProblem[] };

export interface SyncStates {
  templates: GitSyncState | null;
  manifests: ManifestsSyncState | null;
}

/** Where the service keeps its own checkouts and the record of owned manifests. */
export function gitopsDir(dataDir: string): string {
  return join(dataDir, 'gitops');
}

/** Why a sub-path of a repository cannot be used, or undefined. */
export function repoPathProblem(path: string): string | undefined {
  const parts = path.split('/');
  if (path.startsWith('/') || parts.some((part) => part === '..' || part.startsWith('-'))) {
    return `"${path}" must be a folder inside the repository, such as servers or deploy/templates (no "..", not starting with "/")`;
  }
  return undefined;
}

/**
 * Why the service cannot start with these git sync settings (one line saying what to change),
 * or undefined. Reads folders, changes nothing.
 */
export async function gitOpsProblem(settings: Settings, schemes: readonly string[]): Promise<string | undefined> {
  for (const [kind, sync] of [['TEMPLATES', settings.gitSync.templates], ['MANIFESTS', settings.gitSync.manifests]] as const) {
    if (!sync) continue;
    const urlProblem = gitUrlProblem(sync.url, schemes);
    if (urlProblem) return `DEVBOX_${kind}_GIT_URL: ${urlProblem}`;
    const ref = sync.ref === undefined ? undefined : refProblem(sync.ref);
    if (ref) return `DEVBOX_${kind}_GIT_REF: ${ref}`;
    const path = sync.path === undefined ? undefined : repoPathProblem(sync.path);
    if (path) return `DEVBOX_${kind}_GIT_PATH: ${path}`;
  }
  const templates = settings.gitSync.templates;
  if (!templates) return undefined;
  const checkout = templatesCheckout(settings, templates);
  if (resolve(settings.templatesDir) !== resolve(checkout, templates.path ?? '')) {
    return `DEVBOX_TEMPLATES_GIT_PATH=${templates.path} works only with DEVBOX_TEMPLATES_DIR unset (the service then keeps the checkout in ${checkout}): unset one of them`;
  }
  if (isInside(checkout, gitopsDir(settings.dataDir))) return undefined; // the service's own folder
  const problem = await checkoutProblem(checkout, templates.url);
  if (problem) {
    return `DEVBOX_TEMPLATES_DIR: ${problem}, and the service would replace its files with the repository's: unset DEVBOX_TEMPLATES_DIR (the service then keeps its own checkout in ${join(gitopsDir(settings.dataDir), 'templates')}), or set it to an empty folder or a clone of ${maskUrl(templates.url)}`;
  }
  return undefined;
}

/** The templates repository's checkout: the templates folder itself, or with a sub-path the service's own folder. */
function templatesCheckout(settings: Settings, templates: GitSyncSettings): string {
  return templates.path ? join(gitopsDir(settings.dataDir), 'templates') : settings.templatesDir;
}

function isInside(path: string, folder: string): boolean {
  const rel = relative(resolve(folder), resolve(path));
  return rel !== '..' && !rel.startsWith('..' + sep) && !isAbsolute(rel);
}

export interface GitOpsOptions {
  settings: Settings;
  store: ManifestStore;
  schemes: readonly string[];
  /** Bound of one sync (config.workspace.cloneTimeoutSeconds). */
  timeoutMs: number;
  enqueue(name: string): void;
  requestDeletion(name: string): void;
  log: (message: string) => void;
}

/** The repositories configured: none, one or both. Call gitOpsProblem first. */
export class GitOps {
  readonly templates?: GitSync;
  private readonly manifests?: { sync: GitSync; mirror: ManifestsMirror };

  constructor(options: GitOpsOptions) {
    const { settings, store, schemes, timeoutMs, log } = options;
    const { templates, manifests } = settings.gitSync;
    if (templates) {
      this.templates = new GitSync({
        url: templates.url, ref: templates.ref, intervalMs: templates.intervalSeconds * 1000,
        folder: templatesCheckout(settings, templates), schemes, timeoutMs, what: 'templates', log,
      });
    }
    if (manifests) {
      const checkout = join(gitopsDir(settings.dataDir), 'manifests');
      const mirror = new ManifestsMirror({
        store, checkout, path: manifests.path,
        ownershipFile: join(gitopsDir(settings.dataDir), 'manifests-owned.json'),
        repository: maskUrl(manifests.url),
        enqueue: options.enqueue, requestDeletion: options.requestDeletion, log,
      });
      const sync = new GitSync({
        url: manifests.url, ref: manifests.ref, intervalMs: manifests.intervalSeconds * 1000,
        folder: checkout, schemes, timeoutMs, what: 'manifests', log,
        afterSync: (commit) => mirror.apply(commit),
      });
      this.manifests = { sync, mirror };
    }
  }

  get configured(): boolean {
    return this.templates !== undefined || this.manifests !== undefined;
  }

  /** Reads which servers the manifests repository owns (before requests are served), then syncs now and every interval. */
  async start(): Promise<void> {
    await this.manifests?.mirror.load();
    this.templates?.start();
    this.manifests?.sync.start();
  }

  /** Syncs both now (each after its sync under way) and resolves once both are done. */
  async syncNow(): Promise<SyncStates> {
    await Promise.all([this.templates?.syncNow(), this.manifests?.sync.syncNow()]);
    return this.states();
  }

  states(): SyncStates {
    const manifests = this.manifests;
    return {
      templates: this.templates?.state() ?? null,
      manifests: manifests ? { ...manifests.sync.state(), servers: manifests.mirror.servers(), problems: manifests.mirror.problems() } : null,
    };
  }

  /** The repository and file that declare this server, when the manifests repository owns it. */
  ownerOf(name: string): { repository: string; file: string } | undefined {
    return this.manifests?.mirror.ownerOf(name);
  }

  /** GET /health's git_sync section: each repository's state; its last error and skipped files are problems. */
  healthSection(): HealthSection {
    return {
      read: () => ({ ...this.states() }),
      problems: () => {
        const { templates, manifests } = this.states();
        const problems: string[] = [];
        if (templates?.last_error) problems.push(`git sync of the templates from ${templates.url}: ${templates.last_error}`);
        if (manifests?.last_error) problems.push(`git sync of the manifests from ${manifests.url}: ${manifests.last_error}`);
        for (const { file, problem } of manifests?.problems ?? []) {
          problems.push(`manifests repository ${manifests!.url}: ${problem.startsWith(file) ? problem : `${file}: ${problem}`} (skipped; fix it in the repository)`);
        }
        return problems;
      },
    };
  }

  async dispose(): Promise<void> {
    await Promise.all([this.templates?.dispose(), this.manifests?.sync.dispose()]);
  }
}

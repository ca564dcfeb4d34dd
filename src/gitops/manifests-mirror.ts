// Mirrors a git checkout's manifests into the manifests folder. The repository owns the spec of
// the servers it declares: their files are written (through the ManifestStore, so atomically and
// never over a write it did not see) and set back after a local edit; a file removed from the
// repository deletes its server as DELETE /servers/{id} does. Other manifests are never touched.
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { dirname, join, posix } from 'node:path';
import { writeFileAtomic } from '../core/atomic-write.ts';
import { readManifestEntry } from '../manifests/read-entry.ts';
import { parseManifest, type ManifestStore } from '../manifests/store.ts';
import { byCodeUnits } from '../core/compare.ts';

/** A file of the repository that was not mirrored, and why. */
export interface RepoFileProblem {
  /** The file's path in the repository. */
  file: string;
  problem: string;
}

/** A server the repository declares: its file there and the content last mirrored. */
export interface OwnedManifest {
  file: string;
  commit: string;
  sha256: string;
}

/** The ownership file: which repository, and which servers came from it. */
interface Ownership {
  /** The repository's URL, masked. */
  repository: string;
  servers: Record<string, OwnedManifest>;
}

export interface ManifestsMirrorOptions {
  store: ManifestStore;
  /** The checkout of the repository. */
  checkout: string;
  /** The folder inside the repository holding the manifests; unset: the top level. */
  path?: string;
  /** Where the names the repository owns are recorded (`<data>/gitops/manifests-owned.json`). */
  ownershipFile: string;
  /** The repository's URL, masked, for messages. */
  repository: string;
  /** The controller: act on a manifest written or marked. */
  enqueue(name: string): void;
  /** The controller: delete a server whose file cannot carry the deletion mark. */
  requestDeletion(name: string): void;
  log: (message: string) => void;
}

const MANIFEST_FILE = /^([^.].*)\.(yaml|yml)$/;

export class ManifestsMirror {
  private readonly options: ManifestsMirrorOptions;
  private owned = new Map<string, OwnedManifest>();
  private loaded = false;
  private problemList: RepoFileProblem[] = [];

  constructor(options: ManifestsMirrorOptions) {
    this.options = options;
  }

  /** The repository file that declares this server, when the repository owns it. */
  ownerOf(name: string): { repository: string; file: string } | undefined {
    const owned = this.owned.get(name);
    return owned && { repository: this.options.repository, file: owned.file };
  }

  /** Files of the repository skipped at the last sync, with the problem of each. */
  problems(): RepoFileProblem[] {
    return this.problemList;
  }

  /** Names of the servers the repository owns. */
  servers(): string[] {
    return [...this.owned.keys()].sort();
  }

  /** Reads which servers the repository owns, as recorded; before the first sync and before serving requests. */
  async load(): Promise<void> {
    if (this.loaded) return;
    const { ownershipFile, repository, log } = this.options;
    const text = await fs.readFile(ownershipFile, 'utf8').catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return undefined;
      throw error;
    });
    if (text !== undefined) {
      let record: Ownership | undefined;
      try {
        record = JSON.parse(text) as Ownership;
      } catch {
        log(`gitops: ${ownershipFile} is not valid JSON; it is written again at the next sync, and until then no server counts as the repository's`);
      }
      if (record && record.repository !== repository) {
        // Another repository's servers stay as they are, as local manifests: only a removal from
        // the repository that declared them deletes servers.
        log(`gitops: the manifests repository is now ${repository}, was ${record.repository}: the servers of the old one (${Object.keys(record.servers).join(', ') || 'none'}) stay, no longer managed from git`);
      } else if (record) {
        this.owned = new Map(Object.entries(record.servers ?? {}));
      }
    }
    this.loaded = true;
  }

  /** Makes the manifests folder follow the checkout at `commit`. Throws when either folder is missing: then nothing changed. */
  async apply(commit: string): Promise<void> {
    await this.load();
    const { store, checkout, path, log } = this.options;
    // As for the API: a missing manifests folder (a failed mount) pauses its servers, and nothing is written or deleted.
    if ((await store.folderIdentity()) === undefined) {
      throw new Error(`the manifests folder ${store.dir} is missing: nothing is mirrored until it is back`);
    }
    const folder = join(checkout, path ?? '');
    const entries = await fs.readdir(folder, { withFileTypes: true }).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT' || error.code === 'ENOTDIR') return undefined;
      throw error;
    });
    // A missing folder is more likely a wrong setting than a wish to delete every server.
    if (entries === undefined) {
      throw new Error(`the repository has no folder "${path ?? '.'}" at commit ${commit.slice(0, 12)}: fix DEVBOX_MANIFESTS_GIT_PATH, or add the folder to the repository; no server was changed`);
    }

    const problems: RepoFileProblem[] = [];
    const inRepo = new Map<string, string>(); // name → file, valid or not
    const wanted = new Map<string, { file: string; text: string }>();
    for (const entry of entries.sort((a, b) => byCodeUnits(a.name, b.name))) {
      const match = MANIFEST_FILE.exec(entry.name);
      if (!match) continue;
      const name = match[1];
      const file = posix.join(path ?? '', entry.name);
      const other = inRepo.get(name);
      if (other !== undefined) {
        problems.push({ file, problem: `${other} declares the server "${name}" already: keep one of the two files` });
        continue;
      }
      inRepo.set(name, file);
      const problem = await this.readRepoFile(name, file, join(folder, entry.name));
      if (typeof problem === 'string') problems.push({ file, problem });
      else wanted.set(name, { file, text: problem.text });
    }

    // A name a local manifest has, which the repository does not own yet, stays local.
    for (const [name, { file }] of wanted) {
      if (this.owned.has(name)) continue;
      if (await store.exists(name)) {
        problems.push({ file, problem: `the server "${name}" exists already in ${store.fileOf(name)} and does not come from this repository: rename the file in the repository, or delete that server (DELETE /servers/{id}) first` });
        wanted.delete(name);
      }
    }

    // Ownership is recorded before the files are written, so a crash in between never leaves a
    // file the repository wrote that it does not own.
    const gone = [...this.owned.keys()].filter((name) => !inRepo.has(name));
    for (const [name, { file, text }] of wanted) this.owned.set(name, { file, commit, sha256: sha256(text) });
    await this.save();

    for (const [name, { file, text }] of wanted) {
      try {
        const result = await store.replaceText(name, text);
        if (result === 'created' || result === 'updated') {
          log(`gitops: ${store.fileOf(name)} ${result === 'created' ? 'created' : 'set'} from ${file} at ${commit.slice(0, 12)}`);
          this.options.enqueue(name);
        } else if (result === 'invalid') {
          problems.push({ file, problem: `${store.fileOf(name)} is not a regular file (a link, a folder …), so it was not replaced: remove it` });
        }
      } catch (error) {
        problems.push({ file, problem: `writing ${store.fileOf(name)} failed: ${(error as Error).message}` });
      }
    }

    for (const name of gone) {
      await this.deleteServer(name);
      this.owned.delete(name);
    }
    if (gone.length > 0) await this.save();

    const before = new Set(this.problemList.map(describe));
    for (const problem of problems) if (!before.has(describe(problem))) log(`gitops: skipped ${describe(problem)}`);
    this.problemList = problems;
  }

  /** The file's text when it is a valid manifest to mirror, else what is wrong with it. */
  private async readRepoFile(name: string, file: string, path: string): Promise<{ text: string } | string> {
    let text: string | undefined;
    try {
      text = await readManifestEntry(path);
    } catch (error) {
      return `${file} ${(error as Error).message}`;
    }
    if (text === undefined) return 'the file went while it was being read';
    const parsed = parseManifest(name, text, file);
    if (parsed.kind === 'invalid') return parsed.errors.join('; ');
    if (parsed.kind !== 'ok') return 'the file went while it was being read';
    if (parsed.server.metadata.deletionTimestamp !== undefined) {
      return 'metadata.deletionTimestamp has no place in the repository: remove the file from the repository to delete the server';
    }
    return { text };
  }

  /** What DELETE /servers/{id} does: the deletion mark, or the controller told when the file cannot carry it. */
  private async deleteServer(name: string): Promise<void> {
    const { store, log } = this.options;
    const result = await store.update(name, (doc, server) => {
      if (server.metadata.deletionTimestamp) return false;
      doc.setIn(['metadata', 'deletionTimestamp'], new Date().toISOString());
    });
    if (result === 'invalid' || result === 'missing') this.options.requestDeletion(name);
    log(`gitops: the server "${name}" is deleted: its file ${this.owned.get(name)?.file} was removed from the repository`);
    this.options.enqueue(name);
  }

  private async save(): Promise<void> {
    const { ownershipFile, repository } = this.options;
    const record: Ownership = { repository, servers: Object.fromEntries([...this.owned].sort(([a], [b]) => byCodeUnits(a, b))) };
    await fs.mkdir(dirname(ownershipFile), { recursive: true });
    // Durable: a record lost in a crash would leave the servers of files removed from the repository undeleted.
    await writeFileAtomic(ownershipFile, JSON.stringify(record, null, 2) + '\n', { durable: true });
  }
}

/** "file: problem"; a parser's problems name the file (and line) themselves. */
function describe(problem: RepoFileProblem): string {
  return problem.problem.startsWith(problem.file) ? problem.problem : `${problem.file}: ${problem.problem}`;
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}


// Reads and writes EditorServer manifests: one YAML file per server, written only by people and
// the API (read-modify-write that never replaces an edit it did not see), merged on read with
// the controller's status record, which lives in a file of its own (status-file.ts).
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { Document, parseDocument, stringify } from 'yaml';
import { sameData } from '../core/equal.ts';
import { errorClass } from '../core/error-catalogue.ts';
import { KeyedMutex } from '../core/mutex.ts';
import { folderIdentity } from '../core/folder-identity.ts';
import { FolderWatch } from './folder-watch.ts';
import { MANIFEST_EXT, parseManifest, type ManifestRead } from './parse.ts';
import { manifestVersion, MAX_MANIFEST_BYTES, readManifestEntry, readManifestVersion, UnreadableEntryError } from './read-entry.ts';
import { linkUnlessTaken, renameIfThere } from './replace.ts';
import { SCHEMA_MODELINE } from './schema.ts';
import type { ManifestEvents, ManifestSource, ManifestWatch } from './source.ts';
import { currentStatus, specHash, StatusFiles, type StatusRecord } from './status-file.ts';
import type { EditorServer, EditorServerStatus } from './types.ts';

export { MAX_MANIFEST_BYTES };
export { MANIFEST_EXT, parseManifest, type ManifestRead };

export type WriteResult = 'unchanged' | 'updated' | 'missing' | 'invalid';

/** Thrown when a file kept changing under a write more often than we retry: the API answers 409. */
export class ConflictError extends errorClass('CONFLICT') {
  override name = 'ConflictError';
}

const MAX_ATTEMPTS = 5;

/**
 * The manifests folder, and beside it (in the data folder) the controller's status records.
 * The manifest file is written by people and by the API (create, update); the controller writes
 * only status records (writeStatus). Without a status folder (`npm run doctor`) the store only
 * reads manifests.
 */
export class ManifestStore implements ManifestSource {
  readonly dir: string;
  protected readonly statuses?: StatusFiles;
  /** The text of our own last write per name, so the watcher can ignore our echoes. */
  private readonly lastWritten = new Map<string, string>();
  private readonly locks = new KeyedMutex();

  constructor(dir: string, statusDir?: string) {
    this.dir = dir;
    if (statusDir !== undefined) this.statuses = new StatusFiles(statusDir);
  }

  fileOf(name: string): string {
    return join(this.dir, name + MANIFEST_EXT);
  }

  describe(name: string): string {
    return this.fileOf(name);
  }

  async exists(name: string): Promise<boolean> {
    return fs.lstat(this.fileOf(name)).then(() => true, () => false);
  }

  /** Makes the folder when missing, puts back writes a crash interrupted and removes their temporaries. */
  async prepare(): Promise<string[]> {
    await fs.mkdir(this.dir, { recursive: true });
    const said = (await this.recoverInterruptedWrites()).map((name) => `put back ${this.fileOf(name)}: a write was interrupted while the file was moved aside`);
    for (const entry of await fs.readdir(this.dir)) {
      if (entry.startsWith('.') && entry.endsWith('.tmp')) await fs.rm(join(this.dir, entry), { force: true });
    }
    return said;
  }

  async watch(events: ManifestEvents, log: (message: string) => void): Promise<ManifestWatch> {
    const watch = new FolderWatch(this, events, log);
    await watch.start();
    return watch;
  }

  /** The uid each status record gives its server, every record read once (at start-up: StatusFiles.loadAll). */
  recordedUids(): Promise<Map<string, string>> {
    return this.statuses?.loadAll() ?? Promise.resolve(new Map());
  }

  /** Where the controller keeps the server's status and generation. */
  statusFileOf(name: string): string | undefined {
    return this.statuses?.fileOf(name);
  }

  /**
   * Manifest names: `*.yaml` entries directly in the folder, hidden and temporary ones excluded.
   * Entries of every kind are listed (links, FIFOs, folders …): reading them reports why they
   * cannot be manifests.
   */
  async list(): Promise<string[]> {
    const entries = await fs.readdir(this.dir).catch((error) => {
      if (error.code === 'ENOENT' || error.code === 'ENOTDIR') return [];
      throw error;
    });
    return entries
      .filter((e) => e.endsWith(MANIFEST_EXT) && e.length > MANIFEST_EXT.length && !e.startsWith('.'))
      .map((e) => e.slice(0, -MANIFEST_EXT.length))
      .sort();
  }

  /**
   * The manifest, with `status` and `metadata.generation` from the status record. Seeing a spec
   * whose canonical hash differs from the one recorded moves the generation, whoever edited it.
   */
  async read(name: string): Promise<ManifestRead> {
    // A spec write takes the file out of place for a moment: wait for it rather than see it missing.
    await this.locks.idle(name);
    let entry: { text: string; version: string } | undefined;
    try {
      entry = await readManifestVersion(this.fileOf(name));
    } catch (error) {
      if (error instanceof UnreadableEntryError) return { kind: 'invalid', name, errors: [`${this.fileOf(name)} ${error.message}`] };
      throw error;
    }
    if (entry === undefined) return { kind: 'missing', name };
    const read = parseManifest(name, entry.text, this.fileOf(name));
    if (read.kind === 'ok' && this.statuses) await this.observe(read.server, this.statuses, entry.version);
    return read;
  }

  /** The file's text, read with bounds and without following links; undefined when it is not there or cannot be a manifest. */
  async textOf(name: string): Promise<string | undefined> {
    return this.readText(name).catch(() => undefined);
  }

  /** True when this process has written the name's file and not seen it changed since (isOwnWrite may then say yes). */
  mayBeOwnWrite(name: string): boolean {
    return this.lastWritten.has(name);
  }

  /** True when the file's text is exactly our last write; any other text forgets that write (the same text again later is theirs). */
  isOwnWrite(name: string, text: string): boolean {
    if (this.lastWritten.get(name) === text) return true;
    this.lastWritten.delete(name);
    return false;
  }

  /**
   * Creates a manifest only if no file has that name yet; false when the name is taken.
   * `onCreated` runs the moment the file exists, before anything else can look at it.
   */
  async create(server: EditorServer, onCreated?: () => void): Promise<boolean> {
    const name = server.metadata.name;
    const text = `${SCHEMA_MODELINE}\n${stringify(server, { lineWidth: 0 })}`;
    const tmp = await this.writeTemp(name, text);
    try {
      await fs.link(tmp, this.fileOf(name)); // atomic and exclusive, unlike rename
      this.lastWritten.set(name, text);
      onCreated?.();
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw error;
    } finally {
      await fs.rm(tmp, { force: true });
    }
  }

  /**
   * Creates the manifest with exactly `text` unless an entry has that name (a manifest restored
   * from a snapshot never replaces one); false when the name is taken. Atomic and exclusive, as
   * create() is. The watcher sees it as any new file.
   */
  async createText(name: string, text: string): Promise<boolean> {
    return this.locks.run(name, async () => {
      const tmp = await this.writeTemp(name, text);
      try {
        return await linkUnlessTaken(tmp, this.fileOf(name));
      } finally {
        await fs.rm(tmp, { force: true });
      }
    });
  }

  /**
   * Changes a manifest's metadata or spec (the API's part) through the YAML document, so the
   * comments stay. `mutate` returns false to leave the file as it is; it may run more than
   * once, when the file changed under the write.
   */
  async update(name: string, mutate: (doc: Document, server: EditorServer) => boolean | void): Promise<WriteResult> {
    return this.rewrite(name, (text, server) => {
      const doc = parseDocument(text, { uniqueKeys: false });
      if (mutate(doc, server!) === false) return text;
      return doc.toString({ lineWidth: 0 });
    });
  }

  /**
   * Puts `text` in the file whatever the file holds now, valid or not (a GitOps repository's
   * version of a manifest it owns): created when missing, else replaced as update() replaces,
   * never over a write it did not see. 'invalid' when the entry cannot be a manifest (a link, a
   * folder …): it is left as it is.
   */
  async replaceText(name: string, text: string): Promise<WriteResult | 'created'> {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const result = await this.rewrite(name, () => text, { anyText: true });
      if (result !== 'missing') return result;
      const created = await this.locks.run(name, async () => {
        const tmp = await this.writeTemp(name, text);
        try {
          if (!(await linkUnlessTaken(tmp, this.fileOf(name)))) return false;
          this.lastWritten.set(name, text);
          return true;
        } finally {
          await fs.rm(tmp, { force: true });
        }
      });
      if (created) return 'created';
    }
    throw new ConflictError(`${this.fileOf(name)} kept appearing and disappearing while it was being written (${MAX_ATTEMPTS} attempts)`);
  }

  /**
   * Records the server's status (the controller's part) in its record when it differs; the
   * manifest is never written, and read and parsed again only if it changed since its record was
   * observed (its version, from one lstat, differs). 'missing' or 'invalid' when the manifest is
   * not there or does not validate: nothing is recorded.
   */
  async writeStatus(name: string, status: EditorServerStatus, uid?: string): Promise<WriteResult> {
    const statuses = this.statuses;
    if (!statuses) throw new Error(`the manifest store of ${this.dir} was opened without a status folder`);
    const seen = statuses.seenVersion(name);
    const read = seen !== undefined && seen === (await manifestVersion(this.fileOf(name))) ? undefined : await this.read(name);
    if (read && read.kind !== 'ok') return read.kind;
    return this.locks.run(STATUS_LOCK + name, async () => {
      const record = (await statuses.read(name)) ?? (read && { generation: read.server.metadata.generation ?? 1, specHash: specHash(read.server.spec) });
      if (!record) return 'missing'; // removed since: the server is being deleted
      if (sameData(record.status ?? null, status ?? null) && (uid === undefined || record.uid === uid)) return 'unchanged';
      await statuses.write(name, { ...record, ...(uid === undefined ? {} : { uid }), status });
      return 'updated';
    });
  }

  /** Replaces the server's status record whole (a restore puts back what was kept). */
  async putStatusRecord(name: string, record: StatusRecord): Promise<void> {
    const statuses = this.statuses;
    if (!statuses) throw new Error(`the manifest store of ${this.dir} was opened without a status folder`);
    await this.locks.run(STATUS_LOCK + name, () => statuses.write(name, record));
  }

  /** Removes the manifest file and the server's status record (a deletion of the server of that uid); true when the file existed. */
  async remove(name: string, _uid?: string): Promise<boolean> {
    const removed = await this.locks.run(name, async () => {
      this.lastWritten.delete(name);
      return fs.unlink(this.fileOf(name)).then(() => true, (error: NodeJS.ErrnoException) => {
        if (error.code === 'ENOENT') return false;
        throw error;
      });
    });
    await this.removeStatus(name);
    return removed;
  }

  /** Removes the server's status record. */
  protected async removeStatus(name: string): Promise<void> {
    const statuses = this.statuses;
    if (statuses) await this.locks.run(STATUS_LOCK + name, () => statuses.remove(name));
  }

  /** Moves the generation when the spec changed since last seen, and merges the status record in; `version`: the manifest file's (versionOf), when read from one. */
  protected observe(server: EditorServer, statuses: StatusFiles, version?: string): Promise<void> {
    const name = server.metadata.name;
    return this.locks.run(STATUS_LOCK + name, async () => {
      if (version !== undefined) statuses.seen(name, version);
      const hash = specHash(server.spec);
      let record: StatusRecord | undefined = await statuses.read(name);
      if (!record) {
        // First sight, or a manifest from before status records: its inline status is taken
        // over once (a pid in it is still only adopted after /proc says it is this server's).
        const inline = currentStatus(server.status);
        record = { generation: server.metadata.generation ?? 1, specHash: hash, ...(inline ? { status: inline } : {}) };
        // Written by the first status commit, which follows in the same reconcile: one write, not two.
        statuses.remember(name, record);
      } else if (record.specHash !== hash) {
        record = { ...record, generation: record.generation + 1, specHash: hash };
        await statuses.write(name, record);
      }
      server.metadata.generation = record.generation;
      // The uid the controller gave this name wins over the file's (none, or one copied from
      // another manifest): the controller never writes it into the file.
      if (record.uid !== undefined) server.metadata.uid = record.uid;
      // After the takeover a `status:` left in the manifest is ignored.
      if (record.status) server.status = record.status;
      else delete server.status;
    });
  }

  /**
   * Read, change, and replace only if nobody wrote in between. The file is first moved aside
   * (rename is atomic) and compared with what was read: from then on a writer by path makes a
   * new file, which the exclusive link that puts ours in place refuses to replace, and a writer
   * in place writes into the moved-aside file, which is compared again once ours is in place.
   * Any foreign write seen puts that text back and starts over on it.
   */
  private async rewrite(name: string, change: (text: string, server?: EditorServer) => string, options: { anyText?: boolean } = {}): Promise<WriteResult> {
    return this.locks.run(name, async () => {
      const file = this.fileOf(name);
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        const before = await this.readText(name).catch((error) => {
          if (error instanceof UnreadableEntryError) return null;
          throw error;
        });
        if (before === undefined) return 'missing';
        if (before === null) return 'invalid';
        const parsed = parseManifest(name, before, this.fileOf(name));
        if (parsed.kind !== 'ok' && !options.anyText) return 'invalid';
        const after = change(before, parsed.kind === 'ok' ? parsed.server : undefined);
        if (after === before) return 'unchanged';
        const tmp = await this.writeTemp(name, after);
        const aside = this.tempPath(name, ASIDE_EXT);
        try {
          if (!(await renameIfThere(file, aside))) continue; // gone since the read: look again
          if ((await this.textAt(aside)) !== before) {
            await linkUnlessTaken(aside, file); // theirs goes back, unless a newer file is there already
            continue;
          }
          if (!(await linkUnlessTaken(tmp, file))) continue; // a new file appeared meanwhile: it stays
          this.lastWritten.set(name, after);
          if ((await this.textAt(aside)) !== before) {
            // Written in place through a handle opened before the move: that edit wins, and ours
            // is made again on top of it.
            this.lastWritten.delete(name);
            if ((await this.textOf(name)) === after) await fs.rename(aside, file);
            continue;
          }
          return 'updated';
        } finally {
          await fs.rm(tmp, { force: true });
          await fs.rm(aside, { force: true });
        }
      }
      throw new ConflictError(`${this.fileOf(name)} kept changing while it was being written (${MAX_ATTEMPTS} attempts): wait until nothing else is writing it (an editor saving, a git pull), then try again`);
    });
  }

  /** The manifest's text; undefined when it is not there; throws UnreadableEntryError for an entry that cannot be one. */
  readText(name: string): Promise<string | undefined> {
    return readManifestEntry(this.fileOf(name));
  }

  private textAt(path: string): Promise<string | undefined | null> {
    return readManifestEntry(path).catch(() => null);
  }

  /**
   * The folder's identity (device and inode) while it exists, so a folder that vanished, or
   * was replaced by another (a failed mount, a git checkout), is told from a file that went.
   */
  folderIdentity(): Promise<string | undefined> {
    return folderIdentity(this.dir);
  }

  /**
   * Puts back each manifest a write had moved aside when the process died before putting the
   * new text in place: the file is missing and its text is in `.<name>.yaml.<hex>.aside`. An
   * aside whose file is there is the old text of a finished write, and goes. Returns the names
   * put back. Call at start-up, before the first listing.
   */
  async recoverInterruptedWrites(): Promise<string[]> {
    const restored: string[] = [];
    for (const entry of await fs.readdir(this.dir).catch(() => [] as string[])) {
      const name = ASIDE.exec(entry)?.[1];
      if (name === undefined) continue;
      const aside = join(this.dir, entry);
      if (await linkUnlessTaken(aside, this.fileOf(name))) restored.push(name);
      await fs.rm(aside, { force: true });
    }
    return restored;
  }

  // Hidden: the watcher ignores it. A `.tmp` left by a crash is removed at start-up; an `.aside`
  // may be the only copy of a manifest, and is put back (recoverInterruptedWrites).
  private tempPath(name: string, ext = '.tmp'): string {
    return join(this.dir, `.${name}${MANIFEST_EXT}.${randomBytes(4).toString('hex')}${ext}`);
  }

  // Never creates the folder: one that vanished is waited for, not replaced by an empty one.
  private async writeTemp(name: string, text: string): Promise<string> {
    const tmp = this.tempPath(name);
    const handle = await fs.open(tmp, 'wx', 0o644);
    try {
      await handle.writeFile(text);
      await handle.sync();
    } finally {
      await handle.close();
    }
    return tmp;
  }
}

const ASIDE_EXT = '.aside';
const ASIDE = /^\.([a-z0-9-]+)\.yaml\.[0-9a-f]+\.aside$/;

/** Lock names of status records; manifest names are DNS labels, so they never clash. */
const STATUS_LOCK = 'status/';


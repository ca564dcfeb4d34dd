// Reads and writes EditorServer manifests: one YAML file per server, written atomically, with
// compare-before-replace so an edit made by hand between a read and a write is never lost.
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { Document, isMap, isScalar, parseAllDocuments, parseDocument, stringify, type Pair, type YAMLMap } from 'yaml';
import { MAX_MANIFEST_BYTES, readManifestEntry, UnreadableEntryError } from './read-entry.ts';
import { validateManifest } from './schema.ts';
import { duplicateKeys } from './unique-keys.ts';
import type { EditorServer, EditorServerStatus } from './types.ts';

export const MANIFEST_EXT = '.yaml';
export { MAX_MANIFEST_BYTES };

export type ManifestRead =
  | { kind: 'ok'; name: string; text: string; server: EditorServer }
  | { kind: 'invalid'; name: string; text?: string; errors: string[] }
  | { kind: 'missing'; name: string };

export type WriteResult = 'unchanged' | 'updated' | 'missing' | 'invalid';

/** Thrown when a file kept changing under a write more often than we retry. */
export class ConflictError extends Error {}

const MAX_ATTEMPTS = 5;

/** Parses manifest text; never throws. */
export function parseManifest(name: string, text: string): ManifestRead {
  let docs;
  try {
    // The library's duplicate-key check is quadratic; duplicateKeys() below is not.
    docs = parseAllDocuments(text, { prettyErrors: true, uniqueKeys: false });
  } catch (error) {
    return { kind: 'invalid', name, text, errors: [String((error as Error).message)] };
  }
  if (!Array.isArray(docs)) return { kind: 'invalid', name, text, errors: ['the file could not be read as YAML'] };
  if (docs.length === 0) return { kind: 'invalid', name, text, errors: ['the file is empty: write an EditorServer manifest'] };
  if (docs.length !== 1) {
    return { kind: 'invalid', name, text, errors: [`the file holds ${docs.length} YAML documents: keep exactly one`] };
  }
  const doc = docs[0];
  const syntax = [...doc.errors.map((e) => e.message), ...duplicateKeys(doc, text)];
  if (syntax.length > 0) return { kind: 'invalid', name, text, errors: syntax };
  let value: unknown;
  try {
    value = doc.toJS();
  } catch (error) {
    // For example yaml's guard against alias bombs ("Excessive alias count").
    return { kind: 'invalid', name, text, errors: [String((error as Error).message)] };
  }
  const errors = validateManifest(value, name);
  if (errors.length > 0) return { kind: 'invalid', name, text, errors };
  return { kind: 'ok', name, text, server: value as EditorServer };
}

/** The manifests folder. Only the API writes spec and metadata; only the controller writes status. */
export class ManifestStore {
  readonly dir: string;
  /** The text of our own last write per name, so the watcher can ignore our echoes. */
  private readonly lastWritten = new Map<string, string>();
  private readonly locks = new Map<string, Promise<unknown>>();

  constructor(dir: string) {
    this.dir = dir;
  }

  fileOf(name: string): string {
    return join(this.dir, name + MANIFEST_EXT);
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

  async read(name: string): Promise<ManifestRead> {
    let text: string | undefined;
    try {
      text = await this.readText(name);
    } catch (error) {
      if (error instanceof UnreadableEntryError) return { kind: 'invalid', name, errors: [`${this.fileOf(name)} ${error.message}`] };
      throw error;
    }
    return text === undefined ? { kind: 'missing', name } : parseManifest(name, text);
  }

  /** The file's text, read with bounds and without following links; undefined when it is not there or cannot be a manifest. */
  async textOf(name: string): Promise<string | undefined> {
    return this.readText(name).catch(() => undefined);
  }

  /**
   * True when the file's current content is exactly what this process last wrote. Seeing any
   * other content forgets that write: the same text appearing again later (an operator undoing
   * an edit) is then theirs, not ours.
   */
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
    const text = stringify(server, { lineWidth: 0 });
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
   * Changes a manifest's metadata or spec (the API's part) through the YAML document, so the
   * comments stay. `mutate` returns false to leave the file as it is.
   */
  async update(name: string, mutate: (doc: Document, server: EditorServer) => boolean | void): Promise<WriteResult> {
    return this.rewrite(name, (text, server) => {
      const doc = parseDocument(text, { uniqueKeys: false });
      if (mutate(doc, server) === false) return text;
      return doc.toString({ lineWidth: 0 });
    });
  }

  /**
   * Replaces the status block (the controller's part) when it differs, and records a uid when
   * the manifest has none. The spec's text and comments are spliced around, never re-rendered.
   */
  async writeStatus(name: string, status: EditorServerStatus, uid?: string): Promise<WriteResult> {
    return this.rewrite(name, (text, server) => {
      let next = text;
      if (uid !== undefined && server.metadata.uid === undefined) next = insertUid(next, uid);
      // The controller gives uids: one copied from another manifest is replaced.
      else if (uid !== undefined && server.metadata.uid !== uid) next = replaceUid(next, uid);
      if (!sameJSON(server.status, status)) next = replaceStatus(next, status);
      return next;
    });
  }

  /** Removes the manifest file; true when it existed. */
  async remove(name: string): Promise<boolean> {
    return this.withLock(name, async () => {
      this.lastWritten.delete(name);
      try {
        await fs.unlink(this.fileOf(name));
        return true;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
        throw error;
      }
    });
  }

  private async rewrite(name: string, change: (text: string, server: EditorServer) => string): Promise<WriteResult> {
    return this.withLock(name, async () => {
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        const before = await this.readText(name).catch((error) => {
          if (error instanceof UnreadableEntryError) return null;
          throw error;
        });
        if (before === undefined) return 'missing';
        if (before === null) return 'invalid';
        const parsed = parseManifest(name, before);
        if (parsed.kind !== 'ok') return 'invalid';
        const after = change(before, parsed.server);
        if (after === before) return 'unchanged';
        const tmp = await this.writeTemp(name, after);
        // Compare before replacing: if someone edited the file since we read it, start over.
        const current = await this.readText(name).catch(() => null);
        if (current !== before) {
          await fs.rm(tmp, { force: true });
          if (current === undefined) return 'missing';
          continue;
        }
        this.lastWritten.set(name, after);
        await fs.rename(tmp, this.fileOf(name));
        return 'updated';
      }
      throw new ConflictError(`${this.fileOf(name)} kept changing while it was being written; try again`);
    });
  }

  private readText(name: string): Promise<string | undefined> {
    return readManifestEntry(this.fileOf(name));
  }

  /**
   * The folder's identity (device and inode) while it exists, so a folder that vanished, or
   * was replaced by another (a failed mount, a git checkout), is told from a file that went.
   */
  async folderIdentity(): Promise<string | undefined> {
    const stats = await fs.stat(this.dir).catch(() => undefined);
    return stats?.isDirectory() ? `${stats.dev}:${stats.ino}` : undefined;
  }

  // Never creates the folder: one that vanished is waited for, not replaced by an empty one.
  private async writeTemp(name: string, text: string): Promise<string> {
    const tmp = join(this.dir, `.${name}${MANIFEST_EXT}.${randomBytes(4).toString('hex')}.tmp`);
    const handle = await fs.open(tmp, 'wx', 0o644);
    try {
      await handle.writeFile(text);
      await handle.sync();
    } finally {
      await handle.close();
    }
    return tmp;
  }

  /** One write per name at a time inside this process (the API and the controller share files). */
  private async withLock<T>(name: string, work: () => Promise<T>): Promise<T> {
    const previous = this.locks.get(name) ?? Promise.resolve();
    const run = previous.then(work, work);
    const settled = run.catch(() => undefined);
    this.locks.set(name, settled);
    try {
      return await run;
    } finally {
      if (this.locks.get(name) === settled) this.locks.delete(name);
    }
  }
}

function sameJSON(a: unknown, b: unknown): boolean {
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}

function topLevelPair(doc: Document, key: string): { map: YAMLMap; index: number; pair: Pair } | undefined {
  const map = doc.contents;
  if (!isMap(map)) return undefined;
  const index = map.items.findIndex((p) => isScalar(p.key) && p.key.value === key);
  return index < 0 ? undefined : { map, index, pair: map.items[index] as Pair };
}

/** Splices a fresh `status:` block in place of the old one, which the controller keeps last. */
export function replaceStatus(text: string, status: EditorServerStatus): string {
  const block = stringify({ status }, { lineWidth: 0 });
  const doc = parseDocument(text, { uniqueKeys: false });
  const found = topLevelPair(doc, 'status');
  // A flow-style (or JSON) manifest cannot take a block appended after it.
  if (!isMap(doc.contents) || doc.contents.flow) {
    doc.set('status', status);
    return doc.toString({ lineWidth: 0 });
  }
  if (!found) return (text.endsWith('\n') || text === '' ? text : text + '\n') + block;
  const keyStart = (found.pair.key as { range?: [number, number, number] }).range?.[0];
  if (found.index === found.map.items.length - 1 && keyStart !== undefined) {
    return text.slice(0, keyStart) + block;
  }
  // Someone moved status above other keys: let the YAML library place it.
  doc.set('status', status);
  return doc.toString({ lineWidth: 0 });
}

/** Replaces the value of `metadata.uid` in place, keeping the rest of the text. */
export function replaceUid(text: string, uid: string): string {
  const doc = parseDocument(text);
  const metadata = topLevelPair(doc, 'metadata')?.pair.value;
  const pair = isMap(metadata) ? metadata.items.find((p) => isScalar(p.key) && p.key.value === 'uid') : undefined;
  const range = (pair?.value as { range?: [number, number, number] } | undefined)?.range;
  if (isScalar(pair?.value) && range) return text.slice(0, range[0]) + uid + text.slice(range[1]);
  doc.setIn(['metadata', 'uid'], uid);
  return doc.toString({ lineWidth: 0 });
}

/** Adds `uid:` on the line after `name:` in a block-style metadata map. */
export function insertUid(text: string, uid: string): string {
  const doc = parseDocument(text, { uniqueKeys: false });
  const metadata = topLevelPair(doc, 'metadata')?.pair.value;
  if (isMap(metadata) && !metadata.flow) {
    const namePair = metadata.items.find((p) => isScalar(p.key) && p.key.value === 'name');
    const keyRange = (namePair?.key as { range?: [number, number, number] } | undefined)?.range;
    const valueRange = (namePair?.value as { range?: [number, number, number] } | undefined)?.range;
    if (keyRange && valueRange) {
      const lineStart = text.lastIndexOf('\n', keyRange[0]) + 1;
      const indent = text.slice(lineStart, keyRange[0]);
      if (/^ *$/.test(indent)) {
        const eol = text.indexOf('\n', valueRange[1]);
        const at = eol < 0 ? text.length : eol + 1;
        const prefix = eol < 0 ? '\n' : '';
        return text.slice(0, at) + `${prefix}${indent}uid: ${uid}\n` + text.slice(at);
      }
    }
  }
  doc.setIn(['metadata', 'uid'], uid);
  return doc.toString({ lineWidth: 0 });
}

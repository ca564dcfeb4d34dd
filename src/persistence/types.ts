// The contracts of persistence: where snapshots are kept (a SnapshotStore: a folder, or a Unity
// Catalog volume through the Files API), what one server's snapshot holds, and what the engine
// answers. The engine (snapshots.ts, restore.ts) knows only SnapshotStore; the service
// (service-persistence.ts) knows only the engine.

/**
 * An object store of whole objects under keys such as `objects/ab/abcd…` or
 * `servers/hello/snapshots/2026-11-26T10-00-00.000Z-1a2b.json` (segments of [A-Za-z0-9._-],
 * joined by `/`). `put` is atomic: a reader sees the old object or the new one, never a part.
 */
export interface PutOptions {
  batch?: boolean;
  after?: Promise<unknown>;
}

export interface SnapshotStore {
  /** What a person reads on the health page and in the log: "folder /mnt/keep", "volume /Volumes/main/team/devbox/prod". */
  readonly description: string;
  /**
   * Stores `body` at `key`, durable once it returns; with `options.batch`, durable only once
   * `flush` has returned after it (the engine's objects, flushed together before the index that
   * refers to them is put). A store without `flush` makes every put durable on its own. With
   * `options.after`, the object appears at `key` only once that promise has resolved, and not at
   * all when it rejects (the put then rejects with its reason); a store may prepare the body
   * meanwhile (the index is written and flushed under a temporary name while its objects are
   * still being flushed, then renamed into place).
   */
  put(key: string, body: Buffer, signal?: AbortSignal, options?: PutOptions): Promise<void>;
  /** Makes every batched put that has returned durable. */
  flush?(signal?: AbortSignal): Promise<void>;
  /** The object's bytes (the caller's to keep or hand on), or undefined when there is none. */
  get(key: string, signal?: AbortSignal): Promise<Buffer | undefined>;
  /** Every key that starts with `prefix` (a folder such as `servers/hello/`), at any depth, in no particular order. */
  list(prefix: string, signal?: AbortSignal): Promise<string[]>;
  /** Removes the object; one that is already gone is no error. */
  delete(key: string, signal?: AbortSignal): Promise<void>;
}

/** Why the store refused or failed, so the service can say what to do and whether retrying helps. */
export type StoreFailure =
  /** No permission (403): the app lacks WRITE VOLUME / the folder is not writable. Retry after the operator acts. */
  | 'denied'
  /** The volume or folder does not exist (404 on the root). */
  | 'missing'
  /** Could not connect, or the connection dropped. Retried with backoff. */
  | 'unreachable'
  /** A 5xx, 429 or timeout. Retried with backoff. */
  | 'transient';

/**
 * A server's files could not be reached in its storage (on a cluster: its volume, through the Pod
 * that mounts it, with the API server or the node away): nothing was taken from them or put into
 * them, and nothing at the target changed. Retrying once the storage answers is safe.
 */
export class FilesUnavailable extends Error {
  readonly server: string;

  constructor(server: string, direction: 'read' | 'write', cause: unknown) {
    super(`the files of server "${server}" could not be ${direction === 'read' ? 'read from' : 'written to'} its storage: ${(cause as Error)?.message ?? String(cause)}`);
    this.name = 'FilesUnavailable';
    this.server = server;
  }
}

/** A store operation that failed; `hint` says what a person should do ("add the volume to the app as a resource with Can read and write"). */
export class StoreError extends Error {
  readonly failure: StoreFailure;
  readonly hint: string;

  constructor(failure: StoreFailure, message: string, hint: string) {
    super(message);
    this.name = 'StoreError';
    this.failure = failure;
    this.hint = hint;
  }
}

/** One folder of a server's files that is kept: its workspace, or the editor's user settings. */
export interface SnapshotRoot {
  /** Stable name inside the snapshot: `workspace` or `user`. */
  id: 'workspace' | 'user';
  dir: string;
  /** Only these top-level entries of `dir` are kept (for `user`: settings.json, keybindings.json, tasks.json, snippets); all when unset. */
  only?: string[];
}

/** Everything one snapshot of one server is made from. */
export interface SnapshotSources {
  /** The manifest name (metadata.name). */
  name: string;
  uid: string;
  /** The manifest file's text, exactly as on disk. */
  manifestText: string;
  /** The controller's status record (JSON-serialisable). */
  status: unknown;
  roots: SnapshotRoot[];
  /**
   * gitignore patterns, matched against paths relative to each root: the defaults, then the
   * config's, then the manifest's (later ones win, `!` re-includes). The engine puts
   * DEFAULT_EXCLUDES first itself, so passing them again changes nothing.
   */
  exclude: string[];
  /** Ids of the extensions installed in the editor, reinstalled after a restore (not stored). */
  extensions: string[];
  /** A workspace whose kept files add up to more is refused (the previous snapshot stays current). */
  maxBytes?: number;
  /** More snapshots follow soon (the editor runs): keep a change journal of the roots, so the next walk reads only what changed. */
  watch?: boolean;
}

/** A path in a snapshot's report: text when its bytes are UTF-8, else `\x..` escapes. */
export interface SkippedEntry {
  root: SnapshotRoot['id'];
  path: string;
  /** fifo, socket, device, unreadable, changed-while-read (kept as read), … */
  reason: string;
}

/** A committed snapshot, as listed (GET /servers/{id}/snapshots). */
export interface SnapshotInfo {
  /** Sortable by time: `2026-11-26T10-00-00.000Z-1a2b3c`. */
  id: string;
  name: string;
  uid: string;
  createdAt: string;
  /** stop, interval, api, shutdown, … */
  reason: string;
  /** Files and symlinks kept (folders not counted). */
  files: number;
  /** Bytes of all kept files. */
  bytes: number;
  /** Bytes this snapshot uploaded (new content only). */
  uploadedBytes: number;
  skipped: SkippedEntry[];
  durationMs: number;
}

/** What a restore wrote, and what it could not. */
export interface RestoreResult {
  snapshot: SnapshotInfo;
  manifestText: string;
  status: unknown;
  extensions: string[];
  /** Files and symlinks now as in the snapshot (written, or found the same: size, mode and mtime), and their bytes. */
  files: number;
  bytes: number;
  /** Local files newer than the snapshot, left as they were (also a local folder or link where the snapshot has a file), as `<root id>/<path>`. */
  keptNewer: string[];
  /** Files whose stored content did not match its hash (or whose object is missing): reported, not written, as `<root id>/<path>`. */
  corrupted: string[];
}

/** The default exclude list: folders a person can rebuild, which make snapshots large and slow. */
export const DEFAULT_EXCLUDES: readonly string[] = [
  'node_modules/',
  '.venv/',
  'venv/',
  '__pycache__/',
  '.cache/',
  '.pytest_cache/',
  '.mypy_cache/',
  '.ruff_cache/',
  '.tox/',
  '.gradle/',
  '.next/',
  '.parcel-cache/',
  '.ipynb_checkpoints/',
  '*.pyc',
];

const mb = (bytes: number) => Number((bytes / 2 ** 20).toFixed(1));

/** A snapshot refused because the kept files add up to more than SnapshotSources.maxBytes; the previous snapshot stays current. */
export class WorkspaceTooLargeError extends Error {
  readonly bytes: number;
  readonly limitBytes: number;

  constructor(name: string, bytes: number, limitBytes: number) {
    super(`the workspace of server ${name} holds ${mb(bytes)} MB, more than the limit of ${mb(limitBytes)} MB (persistence.maxWorkspaceMb): exclude folders with persistence.exclude, or raise the limit`);
    this.name = 'WorkspaceTooLargeError';
    this.bytes = bytes;
    this.limitBytes = limitBytes;
  }
}

/** A restore asked for a server or snapshot the store does not hold. */
export class SnapshotNotFoundError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SnapshotNotFoundError';
  }
}

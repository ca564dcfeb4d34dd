// One half of a runtime: a server's storage, its workspace and editor data, which outlive stops
// and starts. The controller prepares it, puts a workspace source into it, keeps the settings
// and extensions the spec asks for in it, and removes it on a deliberate delete; where the files
// are (folders on this machine, a volume in a cluster) is the implementation's. The other half,
// the editor that runs on it, is EditorWorkload (editor-workload.ts).
import type { ExtensionOutcome, InstalledExtensions, PopulateOutcome, PopulateSource } from './interface.ts';

export interface EditorStorage {
  /**
   * The workspace path the editor opens, the server known to the storage, and what must be there
   * before it first runs: for local processes the workspace folder (the editor's own folders
   * come with its first start or extension install), on a cluster nothing (the claim comes
   * with the first start).
   */
  prepare(name: string): Promise<string>;
  /** True when the workspace has no entries (a source is put only into an empty workspace). */
  workspaceEmpty(name: string): Promise<boolean>;
  /** Puts a source into the empty workspace; aborting the signal ends the work and leaves it empty. An ArchiveError is for good. */
  populate(name: string, source: PopulateSource, signal: AbortSignal): Promise<PopulateOutcome>;
  /**
   * A file in the workspace (a path relative to it, such as `.devcontainer/devcontainer.json`), or
   * undefined when there is none. Never follows a link out of the workspace; a file over `maxBytes`
   * is an error naming its size.
   */
  readWorkspaceFile(name: string, path: string, maxBytes: number): Promise<Buffer | undefined>;
  /** The editor's User/settings.json, or undefined when there is none. */
  readSettings(name: string): Promise<string | undefined>;
  /** Replaces the editor's User/settings.json. */
  writeSettings(name: string, text: string): Promise<void>;
  /** What the controller last wrote into the settings (kept beside the editor's data), or undefined. */
  readAppliedSettings(name: string): Promise<string | undefined>;
  writeAppliedSettings(name: string, text: string): Promise<void>;
  /** The extensions in the server's storage. */
  installedExtensions(name: string): Promise<InstalledExtensions>;
  /** Installs one extension (`publisher.name[@version]`, or a .vsix path); aborting the signal ends it. */
  installExtension(name: string, id: string, signal: AbortSignal): Promise<ExtensionOutcome>;
  uninstallExtension(name: string, id: string, signal: AbortSignal): Promise<ExtensionOutcome>;
  /** Removes everything the server has in this storage (its editor must be stopped). */
  remove(name: string): Promise<void>;
  /**
   * Optional. True while reaching the server's storage would cost a workload of its own (on a
   * cluster: no editor Pod runs, so a storage call would start one): the controller then leaves
   * the workspace source, settings and extensions until the editor runs, so a stopped server
   * costs nothing. Absent (local folders): never deferred.
   */
  storageDeferred?(name: string): boolean;
  /**
   * Folders on this machine holding the server's files as they are now, for a snapshot to read:
   * for local processes the live folders themselves (nothing copied), on a cluster a copy out of
   * the volume into `options.stagingDir`. Release it once read (a copy is removed then).
   */
  openForSnapshot(name: string, options: FilesOptions): Promise<ServerFiles>;
  /**
   * Folders on this machine for a restore to write into, holding the server's files as they are
   * (so a restore keeps newer ones): the live folders, or a copy out of the volume. `commit()`
   * puts what they hold into the server's storage (nothing to do for live folders); release it
   * after, committed or not.
   */
  openForRestore(name: string, options: FilesOptions): Promise<RestoreFiles>;
}

export interface FilesOptions {
  signal: AbortSignal;
  /** Where a storage that copies makes its staging folders (the data folder's, on this machine's disk). */
  stagingDir: string;
  /** The entries of the User folder that are kept (settings.json, keybindings.json, tasks.json, snippets): a copy holds only these. */
  userFiles: readonly string[];
}

/** A server's files as folders on this machine. */
export interface ServerFiles {
  /** The workspace. */
  workspace: string;
  /** The editor's User folder (settings.json, keybindings.json, tasks.json, snippets/ and the editor's own files). */
  user: string;
  /** True when these are the folders the editor itself uses (a change journal may watch them); false for a copy. */
  live: boolean;
  /** Done with them: a copy is removed. Never throws. */
  release(): Promise<void>;
}

export interface RestoreFiles extends ServerFiles {
  /** Puts the folders' content into the server's storage, replacing what the kept files were; aborting the signal ends it. */
  commit(signal: AbortSignal): Promise<void>;
}

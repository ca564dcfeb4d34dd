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
}

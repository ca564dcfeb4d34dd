// Where the servers' manifests come from. Two sources implement it: the manifests folder (one
// YAML file per server, watched with chokidar) and a cluster's EditorServer objects (served
// straight from a list-then-watch cache, with no copy on disk). The controller lists, reads and
// watches through this, and never asks which one it has.
import type { ManifestRead } from './parse.ts';

/** What a source's watch tells the controller. */
export interface ManifestEvents {
  /** The manifest of `name` may have changed by someone else's hand: created, edited or gone. */
  changed(name: string): void;
  /** Every server must be looked at again (the folder came back, or another replaced it). */
  everything(): void;
  /** The names the controller knows (a server with a record), so a missed deletion is noticed. */
  known(): Iterable<string>;
}

/** A watch under way. */
export interface ManifestWatch {
  close(): Promise<void>;
}

export interface ManifestSource {
  /** Where a person finds the server's manifest, for messages: its file, or its object. */
  describe(name: string): string;
  /** Every manifest's name, sorted. */
  list(): Promise<string[]>;
  /** The manifest, validated, with the controller's status and generation merged in. */
  read(name: string): Promise<ManifestRead>;
  /** Whether anything by that name is there, valid or not (a link, a folder …). */
  exists(name: string): Promise<boolean>;
  /**
   * The identity of the place manifests live while it is there (a folder's device and inode), so
   * a folder that vanished or was replaced is told from a manifest that went; undefined while
   * it is missing.
   */
  folderIdentity(): Promise<string | undefined>;
  /** Puts the source in order before the first listing (writes a crash interrupted); returns what it said. */
  prepare(): Promise<string[]>;
  /** Starts watching; resolves once every change made from now on is reported. */
  watch(events: ManifestEvents, log: (message: string) => void): Promise<ManifestWatch>;
}

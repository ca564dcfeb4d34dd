// What every step of a reconcile is given: the controller's side effects (deps), its memory
// (cache) and the few acts all steps share (write status, warn, log).
import type { Config } from '../config/settings.ts';
import type { LogLevel, TrackedServer } from '../logs/entry.ts';
import type { ManifestStore } from '../manifests/store.ts';
import type { EditorServerStatus } from '../manifests/types.ts';
import type { EditorRuntime } from '../runtime/interface.ts';
import { allowedGitSchemes } from '../workspace/git-source.ts';
import type { DataLayout } from '../workspace/layout.ts';
import type { ActivityTracker } from './activity.ts';
import type { ServerCache, ServerRecord } from './cache.ts';
import type { Capacity } from './capacity.ts';
import type { PersistenceHooks } from './ensure-restored.ts';
import type { ServerEvents } from './events.ts';
import type { ServerIdentities } from './identity.ts';
import type { Operations } from './operations.ts';
import type { PortAllocator } from './ports.ts';

/** What the controller needs from the log hub. */
export interface ServerLogs {
  track(server: TrackedServer): void;
  event(name: string, level: LogLevel, message: string): void;
  untrack(name: string, options?: { remove?: boolean }): Promise<void>;
}

export interface ReconcilerDeps {
  store: ManifestStore;
  /** Where and how editors run: everything the controller does to an editor or its storage goes through it. */
  runtime: EditorRuntime;
  ports: PortAllocator;
  layout: DataLayout;
  logs: ServerLogs;
  /** The config in use: it follows the config file, so read it where a value is used, never keep it. */
  readonly config: Config;
  /** Git URL schemes a workspace source may use now (allowedGitSchemes of the live config and the mode; unset: a shared machine's). */
  gitSchemes?: () => readonly string[];
  /** When each server was last used (proxy traffic, heartbeats); idle autostop reads it. Without one no server is stopped for idleness. */
  activity?: ActivityTracker;
  /** The capacity limits every start passes (src/controller/capacity.ts); without it, none. */
  capacity?: Capacity;
  /** Work kept across restarts (src/persistence): told of stops and deletes, and holds a server while it is restored. Without it, nothing is kept. */
  persistence?: PersistenceHooks;
  /** Puts a name back on the queue (a probe finished, a process exited). */
  enqueue: (name: string) => void;
  log?: (message: string) => void;
}

export interface ReconcileContext {
  readonly deps: ReconcilerDeps;
  readonly cache: ServerCache;
  /** Writes status (and a new uid) when it changed, and updates the cache; 'gone' when the file is. */
  commit(record: ServerRecord, uid: string, status: EditorServerStatus): Promise<'ok' | 'gone'>;
  /** Says once, in the service log, the server's log and GET /manifests, what the controller noticed. */
  warn(name: string, message: string): void;
  /** Tells listeners (API waits, the proxy) that the server's record changed, or that it is deleted. */
  emit(event: 'changed' | 'deleted', name: string): boolean;
  readonly identities: ServerIdentities;
  /** The recent events of each server (GET /servers/{id}/events). */
  readonly events: ServerEvents;
  /** Long work per server, run outside the queue's workers. */
  readonly operations: Operations;
  log(message: string): void;
}

/** The git URL schemes workspace sources may use now: the service's rule, else the config's or a shared machine's defaults. */
export function gitSchemesOf(deps: Pick<ReconcilerDeps, 'gitSchemes' | 'config'>): readonly string[] {
  return deps.gitSchemes?.() ?? allowedGitSchemes(deps.config.workspace, false);
}

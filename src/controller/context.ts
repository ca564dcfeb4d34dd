// What the steps of a reconcile share: the controller's side effects (deps), the index it writes
// (table), and the named parts that each own one step's memory of every server. No part holds
// another's facts: a step that needs a fact of another asks that part (the editor is the index's,
// a crash history is supervision's, a probe is the health step's).
import type { Config } from '../config/settings.ts';
import type { ServerRecord } from '../index/records.ts';
import type { ServerTable } from '../index/server-table.ts';
import type { LogLevel, TrackedServer } from '../logs/entry.ts';
import type { ManifestStore } from '../manifests/store.ts';
import type { EditorServerStatus } from '../manifests/types.ts';
import type { EditorStorage } from '../runtime/editor-storage.ts';
import type { EditorWorkload } from '../runtime/editor-workload.ts';
import type { ResourceRequirements } from '../runtime/interface.ts';
import type { EditorHealth } from '../runtime/health.ts';
import { allowedGitSchemes } from '../workspace/git-source.ts';
import type { DataLayout } from '../workspace/layout.ts';
import type { Presence } from './absence.ts';
import type { ActivityTracker } from './activity.ts';
import type { Capacity } from './capacity.ts';
import type { DevcontainerPlans } from './ensure-devcontainer.ts';
import type { ExtensionsSeen } from './ensure-extensions.ts';
import type { HealthProbes } from './ensure-health.ts';
import type { IdleStops } from './ensure-idle.ts';
import type { PersistenceHooks } from './ensure-restored.ts';
import type { SettingsApplied } from './ensure-settings.ts';
import type { Sources } from './ensure-workspace.ts';
import type { ServerIdentities } from './identity.ts';
import type { Operations } from './operations.ts';
import type { PortAllocator } from './ports.ts';
import type { CrashHistory, Placement } from './supervision.ts';

/** What the controller needs from the log hub. */
export interface ServerLogs {
  track(server: TrackedServer): void;
  event(name: string, level: LogLevel, message: string): void;
  untrack(name: string, options?: { remove?: boolean }): Promise<void>;
}

export interface ReconcilerDeps {
  store: ManifestStore;
  /** The servers' storage (workspace, settings, extensions): everything the controller does to a server's files goes through it. */
  storage: EditorStorage;
  /** The servers' editors (start, stop, state, adopt, list): everything the controller does to an editor goes through it. */
  workload: EditorWorkload;
  /** Whether an editor serves: its /healthz, asked once or until it answers. */
  health: EditorHealth;
  ports: PortAllocator;
  layout: DataLayout;
  logs: ServerLogs;
  /** The config in use: it follows the config file, so read it where a value is used, never keep it. */
  readonly config: Config;
  /** The resources an editor gets where its spec gives none (the config's, read at each start); without it, none. */
  defaultResources?: () => ResourceRequirements | undefined;
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

/** The named parts, each the memory of one step. */
export interface StepParts {
  /** Where each server's manifest was last seen, and deletions asked while it is missing (absence.ts). */
  readonly presence: Presence;
  /** /healthz probes and the runtime's problems of running editors (ensure-health.ts). */
  readonly health: HealthProbes;
  /** Exits, crashes and restart back-off (supervision.ts). */
  readonly crashes: CrashHistory;
  /** Starts the platform took but has not placed, storage out of reach (supervision.ts). */
  readonly placement: Placement;
  /** The workspace prepared, and failed workspace sources' back-off (ensure-workspace.ts). */
  readonly sources: Sources;
  /** The devcontainer.json plan read last (ensure-devcontainer.ts). */
  readonly devcontainer: DevcontainerPlans;
  /** The settings last applied (ensure-settings.ts). */
  readonly settings: SettingsApplied;
  /** The extensions last found in place, unknown groups said, reloads owed (ensure-extensions.ts). */
  readonly extensions: ExtensionsSeen;
  /** Wakes asked for, and the fresh heartbeat read an idle stop waits on (ensure-idle.ts). */
  readonly idle: IdleStops;
}

export interface ReconcileContext extends StepParts {
  readonly deps: ReconcilerDeps;
  /** The index the controller writes: records, running editors, wake marks, events (src/index/server-table.ts). */
  readonly table: ServerTable;
  readonly identities: ServerIdentities;
  /** Long work per server, run outside the queue's workers. */
  readonly operations: Operations;
  /** Servers seen but not yet told to readers: their first status commit tells them (status-commit.ts). */
  readonly unannounced: Set<string>;
  /** Writes status (and a new uid) when it changed, and updates the index; 'gone' when the file is. */
  commit(record: ServerRecord, uid: string, status: EditorServerStatus): Promise<'ok' | 'gone'>;
  /** Says once, in the service log, the server's log and GET /manifests, what the controller noticed. */
  warn(name: string, message: string): void;
  log(message: string): void;
}

/** The git URL schemes workspace sources may use now: the service's rule, else the config's or a shared machine's defaults. */
export function gitSchemesOf(deps: Pick<ReconcilerDeps, 'gitSchemes' | 'config'>): readonly string[] {
  return deps.gitSchemes?.() ?? allowedGitSchemes(deps.config.workspace, false);
}

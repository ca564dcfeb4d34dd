// The one boundary between the controller and wherever editors run. The controller, the API
// and the proxy know an editor only through this interface: a reference the runtime made, an
// endpoint to send HTTP to, a state, usage and logs. Everything about where the editor's files
// live and how its process (or Pod) is started, watched and stopped is the runtime's.
// The process runtime (process-runtime.ts) runs code-server as local processes; every runtime
// passes the same behaviour suite (test/runtime/conformance.ts).
import type { ExitInfo } from '../core/supervisor.ts';
import type { RuntimeRef } from '../manifests/types.ts';
import type { HealthResult } from './health.ts';
import type { MachineMemory } from './machine-memory.ts';
import type { EditorUsage } from './usage.ts';

export type { RuntimeRef } from '../manifests/types.ts';
export type { ExitInfo } from '../core/supervisor.ts';
export type { EditorUsage } from './usage.ts';
export type { HealthResult } from './health.ts';
export type { MachineMemory } from './machine-memory.ts';

/** Where an editor answers HTTP. The proxy, the health checks and refresh go there, never to an address of their own. */
export interface EditorEndpoint {
  host: string;
  port: number;
}

/** CPU and memory in Kubernetes' own shape (`cpu: "500m"`, `memory: "1Gi"`): what a runtime that can enforce them gives the editor. */
export interface ResourceRequirements {
  requests?: { cpu?: string; memory?: string };
  limits?: { cpu?: string; memory?: string };
}

/** What the controller asks to start: the server, and the route number (port) the editor answers on. */
export interface StartSpec {
  name: string;
  port: number;
  /** The manifest's spec.resources over the config's defaults; a runtime that cannot enforce them ignores them. */
  resources?: ResourceRequirements;
  /** The server's metadata.uid, for a runtime that labels what it makes with it. */
  uid?: string;
}

export interface StartedEditor {
  ref: RuntimeRef;
  endpoint: EditorEndpoint;
}

/**
 * What the runtime knows of one editor, from its own cache (no question to the machine or the
 * cluster on the way): `starting` (it exists, not yet serving as far as the runtime knows),
 * `running`, `exited` (with the code and signal once known: `exit` is undefined while the runtime
 * is still collecting it, moments away; `reason`, the platform's word for the end when it has one,
 * such as a container's `Error` or `OOMKilled`), `gone` (nothing runs under this reference), or
 * `foreign` (something runs under it that is not this server's editor: a copied or forged
 * status; it is never signalled).
 */
export type EditorState =
  | { state: 'starting' | 'running'; endpoint: EditorEndpoint | undefined; problem?: EditorProblem }
  | { state: 'exited'; exit: ExitInfo | undefined; reason?: string }
  | { state: 'gone' }
  | { state: 'foreign' };

/**
 * Why an editor that exists is not serving (yet, or any more), in the runtime's words: a Pod
 * Pending as `Unschedulable` with the scheduler's message, `ImagePullBackOff`, its node
 * `NodeNotReady`. Absent when nothing is wrong as far as the runtime knows.
 */
export interface EditorProblem {
  reason: string;
  message: string;
}

/**
 * start() throws this when the platform has taken the request but not placed the editor anywhere
 * yet (a Pod Pending as Unschedulable: the scheduler's answer is the cluster's capacity). The
 * request stands: a later start() finds it, list() and stop() see it. The controller shows the
 * problem in status and asks again.
 */
export class EditorNotPlaced extends Error {
  readonly problem: EditorProblem;
  constructor(problem: EditorProblem) {
    super(`${problem.reason}: ${problem.message}`);
    this.name = 'EditorNotPlaced';
    this.problem = problem;
  }
}

/**
 * A storage call throws this when what reaches the server's storage cannot run as things stand
 * (on a cluster, the helper Pod that mounts its volume while no editor runs: not placed, or its
 * image not pulled). Nothing is lost: the controller shows the problem in status and asks again.
 */
export class StorageUnavailable extends Error {
  readonly problem: EditorProblem;
  constructor(problem: EditorProblem) {
    super(`${problem.reason}: ${problem.message}`);
    this.name = 'StorageUnavailable';
    this.problem = problem;
  }
}

/** Something the runtime's platform said about a server's editor (a Kubernetes event), shown among the server's events. */
export interface RuntimeEvent {
  level: 'INFO' | 'WARN';
  reason: string;
  message: string;
}

/** An editor the runtime runs for this service, found by list() (adoption after a restart). */
export interface RunningEditor {
  name: string;
  ref: RuntimeRef;
  /** The port it answers on, when the runtime can tell. */
  port: number | undefined;
}

/** A workspace source as the runtime receives it: a git repository, or a ZIP already on this machine. */
export type PopulateSource =
  | { git: { url: string; ref?: string; depth?: number }; schemes: readonly string[]; timeoutMs: number }
  | { archive: { sha256: string; path: string } };

export interface PopulateOutcome {
  /** Entries extracted from an archive. */
  entries?: number;
}

/** One editor's extensions as they are in its storage: lower-case publisher.name → version. */
export type InstalledExtensions = Map<string, string | undefined>;

export interface ExtensionOutcome {
  ok: boolean;
  version?: string;
  message?: string;
  /** The install was cancelled (its signal aborted) and its work ended: nothing to record. */
  cancelled?: boolean;
}

/** One line of an editor's own output, as its log stream gives it. */
export interface EditorOutput {
  stream: 'stdout' | 'stderr';
  line: string;
}

export interface EditorRuntime {
  /** Names the runtime in logs and in the references it makes (RuntimeRef.kind). */
  readonly kind: string;

  // Storage: the server's workspace and editor data, which outlive stops and starts.
  /**
   * The workspace path the editor opens, the server known to the runtime, and what must be there
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
  /** Removes everything the server has in this runtime's storage (its editor must be stopped). */
  remove(name: string): Promise<void>;
  /**
   * Optional. True while reaching the server's storage would cost a workload of its own (on a
   * cluster: no editor Pod runs, so a storage call would start one): the controller then leaves
   * the workspace source, settings and extensions until the editor runs, so a stopped server
   * costs nothing. Absent (local folders): never deferred.
   */
  storageDeferred?(name: string): boolean;

  // The editor.
  /** True when the route number can be given to an editor now (for local processes: nothing listens on it). */
  portIsFree(port: number): Promise<boolean>;
  /** Starts the server's editor; the reference is what status records. */
  start(spec: StartSpec): Promise<StartedEditor>;
  /** Stops the editor; false, and nothing signalled, when the reference is not server `name`'s editor. */
  stop(name: string, ref: RuntimeRef, graceMs: number): Promise<boolean>;
  /** The editor's state from the runtime's cache (see EditorState). Any reference is safe to ask about. */
  state(name: string, ref: RuntimeRef): EditorState;
  /**
   * Takes over an editor the runtime did not start in this run (after a restart): its endpoint
   * when the reference is, right now, server `name`'s running editor, and from then on it is
   * watched like one started; undefined (nothing watched) otherwise. `port` is the route number
   * status recorded, for an editor whose own port the runtime cannot read; the endpoint is
   * undefined only when neither is known.
   */
  adopt(name: string, ref: RuntimeRef, port?: number): { endpoint: EditorEndpoint | undefined } | undefined;
  /** The editors this runtime runs for this service, whatever the controller remembers. */
  list(): Promise<RunningEditor[]>;
  /** Asks the editor's /healthz once (within timeoutMs, 3 s unless given). */
  health(endpoint: EditorEndpoint, timeoutMs?: number): Promise<HealthResult>;
  /** Asks /healthz until it answers, the deadline passes or `cancelled` says stop. */
  waitReady(endpoint: EditorEndpoint, deadline: number, cancelled: () => boolean): Promise<boolean>;
  /** The memory the editors share, for capacity's `auto` limit; undefined when the runtime has none to offer (a cluster's scheduler decides). */
  memory(): MachineMemory | undefined;
  /** CPU and memory by reference; an editor gone meanwhile is left out. */
  usage(refs: RuntimeRef[]): Promise<Map<RuntimeRef, EditorUsage>>;
  /** The editor's output from now on (and what is still kept of before, with `since: 'start'`), until the signal aborts. */
  logs(name: string, options: { signal: AbortSignal; since?: 'now' | 'start' }): AsyncIterable<EditorOutput>;
  /** Called with a server's name whenever one of its editors changed state (exited, became ready, a problem came or went); the controller queues the name. */
  onChange(listener: (name: string) => void): void;
  /** Called with what the platform says about a server's editor (a runtime without such events never calls it). */
  onEvent(listener: (name: string, event: RuntimeEvent) => void): void;
  /**
   * Resolves once the runtime's view is current (a cluster runtime's first list of its objects):
   * state(), adopt() and list() answer from it. The service waits for it before the controller
   * adopts anything; the process runtime's view is current at once.
   */
  synced(): Promise<void>;
  /** Stops watching (editors keep running). */
  dispose(): void;
}

/** True for the states in which an editor exists and may serve. */
export function isRunning(state: EditorState['state']): boolean {
  return state === 'running' || state === 'starting';
}

/** The pid the interface's records show: a local process's, else null. */
export function pidOf(ref: RuntimeRef | null | undefined): number | null {
  return ref?.kind === 'process' && typeof ref.pid === 'number' ? ref.pid : null;
}

/** True when two references name the same editor. */
export function sameRef(a: RuntimeRef | null | undefined, b: RuntimeRef | null | undefined): boolean {
  if (!a || !b) return false;
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => a[k] === b[k]);
}

/** A short text naming the editor in logs: `pid 123` for a process, else its fields. */
export function describeRef(ref: RuntimeRef): string {
  const pid = pidOf(ref);
  if (pid !== null) return `pid ${pid}`;
  return Object.entries(ref).filter(([k]) => k !== 'kind').map(([k, v]) => `${k} ${v}`).join(', ') || ref.kind;
}

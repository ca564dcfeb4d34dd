// The one boundary between the controller and wherever editors run. The controller, the API
// and the proxy know an editor only through these types: a reference the runtime made, an
// endpoint to send HTTP to, a state, usage and logs. Everything about where the editor's files
// live and how its process (or Pod) is started, watched and stopped is the runtime's, in two
// halves: the storage (editor-storage.ts) and the workload (editor-workload.ts). The process
// runtime (processes.ts, process-storage.ts) runs code-server as local processes, the Kubernetes
// runtime (kubernetes/) as Pods; every runtime passes the same behaviour suites
// (test/runtime/workload-conformance.ts, test/runtime/storage-conformance.ts).
import type { ExitInfo } from '../core/supervisor.ts';
import type { RuntimeRef } from '../manifests/types.ts';
import type { EditorStorage } from './editor-storage.ts';
import type { EditorWorkload } from './editor-workload.ts';
import type { EditorHealth } from './health.ts';

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
  /** Variables the editor's environment gains over the runtime's own (devcontainer.json's containerEnv and remoteEnv, substituted). */
  env?: Record<string, string>;
  /** The image the editor runs in (devcontainer.json's `image`), for a runtime that runs images; others never receive it. */
  image?: string;
  /**
   * The least the server's volume must hold, in bytes (devcontainer.json's hostRequirements.storage),
   * for a runtime that makes volumes: a new one asks for at least that, one that exists grows where
   * the platform can grow it.
   */
  storageBytes?: number;
}

/** One command run beside a server's editor (a devcontainer.json lifecycle command): a shell string or a program and its arguments. */
export type { CommandLine } from '../devcontainer/types.ts';

/** How a command run by EditorWorkload.run ended: its exit code, or null with the signal that ended it (or that it could not start). */
export interface CommandEnd {
  exitCode: number | null;
  signal?: string;
  /** Why it could not be started at all, when that is how it ended. */
  error?: string;
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

/**
 * A runtime: where editors run, in two halves the controller drives separately. `storage` holds
 * each server's files (editor-storage.ts); `workload` runs its editor on them (editor-workload.ts).
 * Whether an editor serves is asked the same way whatever runs it (health.ts: its /healthz over
 * HTTP); `health` is given only by a stand-in whose editors answer otherwise (tests).
 */
export interface EditorRuntime {
  /** Names the runtime in logs and in the references it makes (RuntimeRef.kind). */
  readonly kind: string;
  readonly storage: EditorStorage;
  readonly workload: EditorWorkload;
  /**
   * How its editors' output reaches the log hub: `files` the editors write in each server's log
   * folder, which the hub follows (local processes), or the workload's log stream (`stream`).
   */
  readonly output: 'files' | 'stream';
  readonly health?: EditorHealth;
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

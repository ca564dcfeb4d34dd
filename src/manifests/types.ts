// The EditorServer resource: one YAML manifest per server, shaped like a Kubernetes object.
import type { DevcontainerSpec, DevcontainerStatus } from '../devcontainer/types.ts';
import type { Resources } from './resources.ts';

export type { Resources };

export const API_VERSION = 'devbox.dev/v1alpha1';
export const KIND = 'EditorServer';
export const RESTARTED_AT = 'devbox.dev/restartedAt';

export type RestartPolicy = 'Never' | 'OnFailure' | 'Always';

export type Phase =
  | 'Pending'
  | 'Provisioning'
  | 'Stopped'
  | 'Starting'
  | 'Running'
  | 'Stopping'
  | 'Failed'
  | 'Terminating';

/** Put into an empty workspace once (src/controller/ensure-workspace.ts): a git clone or an uploaded ZIP. */
export interface WorkspaceSource {
  git?: { url: string; ref?: string; depth?: number };
  /** A ZIP kept in the data folder's archives/ under its sha256 (hex). */
  archive?: { sha256: string };
}

export interface EditorServerSpec {
  /** The interface's `name`; optional in a hand-written manifest, where the manifest name stands in. */
  displayName?: string;
  running: boolean;
  port?: number;
  restartPolicy?: RestartPolicy;
  /** Stop after this long without activity (IdleTimeout); 0: never; unset: the config's editor.idleTimeoutSeconds. */
  idleTimeoutSeconds?: number;
  workspace?: { source?: WorkspaceSource };
  /** What this server's snapshots leave out (gitignore patterns), after the defaults and the config's persistence.exclude. */
  persistence?: { exclude?: string[] };
  extensionGroups?: string[];
  extensions?: string[];
  settings?: Record<string, unknown>;
  /** CPU and memory in Kubernetes' own shape, over the config's runtime.kubernetes.resources; local processes ignore them. */
  resources?: Resources;
  /** Who besides its owner (and the admins) may open and use it under `access: owner`: identities as the sign-on gives them. */
  access?: { sharedWith?: string[] };
  /** The workspace's devcontainer.json: `ignore`, or the path of the file relative to the workspace; unset: `.devcontainer/devcontainer.json`, else `.devcontainer.json`. */
  devcontainer?: DevcontainerSpec;
}

export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
  lastTransitionTime: string;
}

export interface ExtensionStatus {
  id: string;
  state: 'Installed' | 'Failed';
  version?: string;
  message?: string;
}

/** A runtime's reference to one editor it runs, kept in status: serialisable, opaque to all but its runtime. */
export interface RuntimeRef {
  readonly kind: string;
  readonly [field: string]: string | number;
}

export interface EditorServerStatus {
  phase: Phase;
  reason?: string;
  message?: string;
  observedGeneration?: number;
  port?: number;
  /**
   * The runtime's reference to the running editor (null or absent: none runs): plain JSON whose
   * `kind` names the runtime (`process`: pid and start time; a Pod: namespace, name and uid). Only
   * that runtime looks inside it, and only after checking it is this server's editor.
   */
  runtimeRef?: RuntimeRef | null;
  startTime?: string;
  workspacePath?: string;
  restarts?: number;
  lastExit?: { code: number | null; signal: string | null; at: string };
  observedRestartedAt?: string;
  /** When the controller stopped the editor for idleness (reason IdleTimeout): it stays stopped, though spec.running is true, until woken. */
  idleStoppedAt?: string;
  extensions?: ExtensionStatus[];
  conditions?: Condition[];
  /** What was honoured of the workspace's devcontainer.json, and where its lifecycle commands stand. */
  devcontainer?: DevcontainerStatus;
}

export interface EditorServerMetadata {
  name: string;
  uid?: string;
  generation?: number;
  annotations?: Record<string, string>;
  labels?: Record<string, string>;
  deletionTimestamp?: string;
}

export interface EditorServer {
  apiVersion: typeof API_VERSION;
  kind: typeof KIND;
  metadata: EditorServerMetadata;
  spec: EditorServerSpec;
  status?: EditorServerStatus;
}

/** The name a person knows the server by: spec.displayName, else the manifest name (as the records' `name` says). */
export function displayNameOf(server: Pick<EditorServer, 'metadata' | 'spec'>): string {
  return server.spec.displayName ?? server.metadata.name;
}

/** Stopped to make room: it stays stopped, although its spec says running, until it is started again. */
export function heldForCapacity(status: EditorServerStatus): boolean {
  return status.phase === 'Stopped' && status.reason === 'StoppedForCapacity';
}

/** Where a server that was stopped for idleness is on its way back; undefined for any other. */
export type WakeState = { state: 'starting' } | { state: 'refused' | 'failed'; message: string; /** refused by a limit per person, not the fleet's room */ quota?: boolean };

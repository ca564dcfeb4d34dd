// What a workspace's devcontainer.json asks of its editor, as the controller honours it without a
// container engine (containers.dev's reference, JSON with comments). The file is parsed into a
// DevcontainerPlan, plain data kept in status; the controller's steps take their part of it:
// extensions and settings (beside the manifest's, which win), the environment, the lifecycle
// commands, the ports forwarded through the proxy, the host requirements at admission, and on a
// cluster the editor's image. What needs a container engine is kept as warnings.

/** The lifecycle commands, in the order they run. */
export const LIFECYCLE_ORDER = [
  'onCreateCommand',
  'updateContentCommand',
  'postCreateCommand',
  'postStartCommand',
  'postAttachCommand',
] as const;

export type LifecycleName = (typeof LIFECYCLE_ORDER)[number];

/** Run once per workspace (the first time its content is there), as opposed to every start or every attach. */
export const ONCE_PER_WORKSPACE: readonly LifecycleName[] = ['onCreateCommand', 'updateContentCommand', 'postCreateCommand'];

/**
 * One command: a string runs in a shell (`/bin/sh -c`), an array runs as the program and its
 * arguments with no shell.
 */
export type CommandLine = { shell: string } | { argv: string[] };

/**
 * One lifecycle step: one command, or (devcontainer.json's object form) named commands that run
 * in parallel, the step ending when all have ended.
 */
export interface LifecycleStep {
  name: LifecycleName;
  /** One entry for the string and array forms (label undefined); one per key, in the file's order, for the object form. */
  commands: { label?: string; command: CommandLine }[];
}

/** A port forwarded through the proxy, with what portsAttributes says of it. */
export interface ForwardedPort {
  port: number;
  /** portsAttributes[port].label */
  label?: string;
  /** portsAttributes[port].protocol: 'http' (the default) or 'https'. */
  protocol?: 'http' | 'https';
  /** portsAttributes[port].onAutoForward, kept for the dashboard (notify, openBrowser, openPreview, silent, ignore). */
  onAutoForward?: string;
}

/** hostRequirements, in plain numbers. */
export interface HostRequirements {
  cpus?: number;
  memoryBytes?: number;
  storageBytes?: number;
}

/** What the controller honours of one devcontainer.json. Plain JSON: kept in status and shown by the API. */
export interface DevcontainerPlan {
  /** The file, relative to the workspace (`.devcontainer/devcontainer.json`, `.devcontainer.json`, or spec.devcontainer.path). */
  path: string;
  /** sha256 (hex) of the file's bytes, so a change is seen. */
  sha256: string;
  /** customizations.vscode.extensions, as given (ids, lower-cased; `-id` entries, which the reference uses to leave one out, are dropped). */
  extensions: string[];
  /** customizations.vscode.settings: the manifest's spec.settings wins where both speak. */
  settings: Record<string, unknown>;
  /** containerEnv and remoteEnv as written: substituted when used, since the workspace folder is the runtime's. */
  containerEnv: Record<string, string>;
  /** remoteEnv: a null value removes the variable from the editor's environment. */
  remoteEnv: Record<string, string | null>;
  /** The lifecycle commands given, by name. */
  lifecycle: Partial<Record<LifecycleName, LifecycleStep>>;
  /** The last command the editor waits for before it starts (devcontainer.json's waitFor; default updateContentCommand). */
  waitFor: LifecycleName;
  forwardPorts: ForwardedPort[];
  hostRequirements?: HostRequirements;
  /** `image`: the editor's image on a runtime that runs images (Kubernetes); a warning elsewhere. */
  image?: string;
  /** What the file asks that is not honoured here, one sentence each, naming the field and why. */
  warnings: string[];
}

/** Where a lifecycle step stands for this server (status.devcontainer.lifecycle). */
export interface LifecycleState {
  state: 'Running' | 'Succeeded' | 'Failed' | 'Skipped';
  /** The failing command's exit code (null when it ended by a signal or could not be started). */
  exitCode?: number | null;
  /** The command that failed (its label in the object form, else the step's name), and its last line of output. */
  message?: string;
  at: string;
}

/**
 * What status keeps of devcontainer.json (status.devcontainer), and the API shows as a server's
 * `devcontainer`: the plan in effect, or the reason none is (ignored, not found, not valid).
 */
export interface DevcontainerStatus {
  /** `applied`: a plan is in effect; `ignored`: spec.devcontainer says ignore; `none`: no file; `invalid`: the file could not be read (message says why). */
  state: 'applied' | 'ignored' | 'none' | 'invalid';
  message?: string;
  plan?: DevcontainerPlan;
  lifecycle?: Partial<Record<LifecycleName, LifecycleState>>;
  /** The WorkspaceReady condition's transition the file was read after (content arriving later is read again). */
  readAfter?: string;
  /** What the running editor was started with of the plan (image, requirements, environment), as a key: a different one needs a new start. */
  startedWith?: string;
  /** The workspace the once-per-workspace lifecycle commands ran for. */
  workspaceKey?: string;
}

/** spec.devcontainer: `ignore`, or the file's path relative to the workspace. Unset: looked for in the usual places (DEFAULT_PATHS). */
export type DevcontainerSpec = 'ignore' | (string & {});

/** The places looked at, in order, when spec.devcontainer names none. */
export const DEFAULT_PATHS = ['.devcontainer/devcontainer.json', '.devcontainer.json'] as const;

/** A devcontainer.json larger than this is refused (the reference's own files are a few KB). */
export const MAX_FILE_BYTES = 256 * 1024;

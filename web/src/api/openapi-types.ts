// Generated from the OpenAPI document (GET /openapi.json, src/api/openapi/) by
// `npm run gen:api-types` (scripts/gen-api-types.ts). Do not edit: change the document and run it
// again. One type for each schema of components.schemas, under its name there.

/** Exactly one of groupName and group_name. */
export type ApplyGroupSettings = { groupName?: string; group_name?: string; };

export type CreateFromTemplate = {
  name: string;
  /** A template's id, from GET /templates */
  template_id: string;
  /** The gallery tab of the template; when given it must be the template's */
  tab_name?: string;
};

export type CreateMetadata = { name: string; };

export type CreateServer = {
  name: string;
  extensions?: string[];
  extension_groups?: string[];
  port?: number;
  restart_policy?: "Never" | "OnFailure" | "Always";
  /** Also at most 64 KiB as JSON, 16 levels deep and 1000 keys and array items in all (src/manifests/limits.ts) */
  settings?: { [key: string]: unknown; };
};

export type InstallExtension = {
  /** publisher.name, optionally @version */
  extension: string;
};

export type InstallExtensions = { extensions: string[]; };

export type ReplaceAccess = {
  /** Everyone the server is shared with from now on (an empty list: nobody but its owner and the admins), each an email address or user id as the platform's sign-on forwards it, in any case; repeats count once */
  shared_with: string[];
};

export type ShareServer = {
  /** Who to share the server with: an email address or user id as the platform's sign-on forwards it (X-Forwarded-Email, else X-Forwarded-User), in any case */
  person: string;
};

export type AuditEntry = {
  /** Its place in the chain, from 1, across rotated files. */
  seq: number;
  time: string;
  /** The signed-in identity; `local` without sign-on; `controller` for its own acts; `file` (manifests folder) or `cluster` for the other doors. */
  actor: string;
  door: "api" | "dashboard" | "proxy" | "manifest" | "cluster" | "controller";
  /** create, edit, start, stop, restart, delete, undelete, snapshot, snapshot-restore, share, revoke, idle-stop, capacity-stop, restore, audit-recovered. */
  action: string;
  server_id: string | null;
  /** The server's manifest name. */
  server_name: string | null;
  outcome: "ok" | "refused" | "failed";
  /** The error code of a refusal or failure. */
  code?: string;
  /** What changed (spec field names, the snapshot put back …); never secrets or file contents. */
  detail?: string;
  /** The hash of the entry before (64 zeros for the first). */
  prev: string;
  /** SHA-256 (hex) of the canonical JSON of the entry without `hash`. */
  hash: string;
};

export type AuditPage = {
  entries: AuditEntry[];
  /** Give as `cursor` for older entries; null at the oldest. */
  next_cursor: string | null;
  /** The newest entry's seq in the whole trail (0 when empty). */
  last_seq: number;
  /** The newest entry's hash: keep it elsewhere to detect a later cut of the trail's end. */
  last_hash: string;
};

export type AuditVerification = {
  ok: boolean;
  files: number;
  /** Entries checked before the first break (all of them when ok). */
  entries: number;
  first_seq: number | null;
  last_seq: number | null;
  last_hash: string | null;
  /** Present when older files were rotated away: the oldest kept entry's prev is taken on trust. */
  anchored_at?: { file: string; seq: number; prev: string; };
  /** The first entry that breaks the chain. */
  broken?: { file: string; line: number; seq: number | null; problem: string; };
};

/** Every refusal and failure, from every part of the service (API, proxy, WebSocket handshakes). */
export type Error = {
  status: "error";
  error: {
    /** A stable code, such as SERVER_NOT_FOUND, INVALID_BODY or PORT_TAKEN. */
    code: string;
    /** What went wrong and what to change. */
    message: string;
    /** More about the error where there is more, such as `{problems: [...]}` for an invalid body. */
    details?: unknown;
  };
};

export type Condition = {
  /** WorkspaceReady, ExtensionsInstalled, Ready… */
  type: string;
  status: "True" | "False" | "Unknown";
  reason?: string;
  message?: string;
  lastTransitionTime: string;
};

export type ExtensionStatus = {
  id: string;
  state: "Installed" | "Failed";
  version?: string;
  /** Why the install failed. */
  message?: string;
};

export type ServerRecord = {
  /** The server's id: a UUID, or the uid a hand-written manifest gave it. */
  id: string;
  /** The display name (spec.displayName, else the manifest name). */
  name: string;
  /** The editor's port; null until one is assigned. */
  port: number | null;
  /** The workspace folder; null until it is made. */
  workspace_path: string | null;
  /** Extension ids of spec.extensions. */
  extensions: string[];
  /** The server's status word: `stopped` (also while its workspace and extensions are prepared), `starting`, `running`, `stopping` or `failed`. */
  status: "stopped" | "starting" | "running" | "stopping" | "failed";
  /** null when no editor process runs. */
  pid: number | null;
  /** When the running editor started; null when none runs. */
  start_time: string | null;
  /** Seconds since start_time, fractional; 0 when none runs. */
  uptime: number;
  cpu_percent: number;
  memory_mb: number;
  /** The manifest name (metadata.name), unique like the id. */
  manifest: string;
  /** Who created it (the devbox.dev/owner annotation); null when nobody signed in did. */
  owner: string | null;
  /** Who else may open and use it under `access: owner` (spec.access.sharedWith), lower case; empty when nobody. GET /servers/{id}/access says whether it takes effect. */
  shared_with: string[];
  /** The controller's phase (status.phase of the manifest). */
  phase: "Pending" | "Provisioning" | "Stopped" | "Starting" | "Running" | "Stopping" | "Failed" | "Terminating";
  reason: string | null;
  message: string | null;
  restart_policy: "Never" | "OnFailure" | "Always";
  /** spec.idleTimeoutSeconds; null: the config's editor.idleTimeoutSeconds applies. */
  idle_timeout_seconds: number | null;
  /** When the controller stopped it for idleness. */
  idle_stopped_at: string | null;
  /** spec.resources: CPU and memory in Kubernetes' shape, over the config's defaults (the Kubernetes runtime enforces them, local processes ignore them); null when the manifest gives none. */
  resources: Resources | null;
  extension_status: ExtensionStatus[];
  conditions: Condition[];
  /** Spec changes counted (metadata.generation). */
  generation: number | null;
  /** The last generation the controller has acted on. */
  observed_generation: number | null;
  /** Present when the manifest file is invalid: its problems. */
  manifest_errors?: string[];
  /** Its snapshots at the persistence target (DEVBOX_PERSIST_TO); null when the service keeps none. */
  persistence: PersistenceState | null;
  /** What it took from its workspace's devcontainer.json (status.devcontainer); null until the file was looked for (before the first start). */
  devcontainer: Devcontainer | null;
};

export type Resources = { requests?: ResourceAmounts; limits?: ResourceAmounts; };

export type ResourceAmounts = {
  /** A Kubernetes quantity: "500m", "2". */
  cpu?: string;
  /** A Kubernetes quantity: "512Mi", "2Gi". */
  memory?: string;
};

export type PersistenceState = {
  /** When the last snapshot was committed; null before the first. */
  last_snapshot_at: string | null;
  last_snapshot_id: string | null;
  /** Bytes of the files the last snapshot kept. */
  size_bytes: number | null;
  /** Files the last snapshot kept. */
  files: number | null;
  /** Why the last attempt failed, and what to do; null after a success. */
  last_error: string | null;
  /** What is under way now: a snapshot, a restore, or nothing (null). */
  in_progress: "snapshot" | "restore" | null;
};

export type Snapshot = {
  /** Sortable by time. */
  id: string;
  created_at: string;
  /** What took it: stop, interval, api, shutdown… */
  reason: string;
  files: number;
  /** Bytes of every file it keeps. */
  bytes: number;
  /** Bytes it added to the target (new content only). */
  uploaded_bytes: number;
  duration_ms: number;
  /** What was not kept, and why: FIFOs, sockets, devices, unreadable files; files that changed while read are kept as read and listed. */
  skipped: Array<{ root: "workspace" | "user"; path: string; reason: string; }>;
};

export type Snapshots = {
  status: "success";
  data: {
    /** Newest first. */
    snapshots: Snapshot[];
  };
};

export type SnapshotTaken = { status: "success"; message: string; data: Snapshot; };

export type SnapshotRestored = {
  status: "success";
  message: string;
  data: {
    snapshot: Snapshot;
    files: number;
    bytes: number;
    /** Local files newer than the snapshot, left as they were. */
    kept_newer: string[];
    /** Files whose stored content failed its hash check: not restored. */
    corrupted: string[];
  };
};

export type DeletedServers = {
  status: "success";
  data: {
    /** Servers deleted within persistence.retainDeletedDays, which POST /snapshots/deleted/{name}/restore brings back. */
    servers: Array<{
      /** The manifest name. */
      name: string;
      /** The server's id: a UUID, or the uid a hand-written manifest gave it. */
      id: string;
      deleted_at: string;
      latest: Snapshot;
    }>;
  };
};

/** The create operations' answer: a subset of the server record. */
export type CreatedServer = {
  /** The server's id: a UUID, or the uid a hand-written manifest gave it. */
  id: string;
  name: string;
  port: number | null;
  workspace_path: string | null;
  extensions: string[];
  /** The server's status word: `stopped` (also while its workspace and extensions are prepared), `starting`, `running`, `stopping` or `failed`. */
  status: "stopped" | "starting" | "running" | "stopping" | "failed";
  /** null: a new server is stopped. */
  pid: number | null;
};

export type WorkspaceCreated = {
  /** The server's id: a UUID, or the uid a hand-written manifest gave it. */
  id: string;
  name: string;
  port: number | null;
  workspace_path: string | null;
  /** The server's status word: `stopped` (also while its workspace and extensions are prepared), `starting`, `running`, `stopping` or `failed`. */
  status: "stopped" | "starting" | "running" | "stopping" | "failed";
};

/** `data` of start, stop, restart and the multi-step routes. */
export type Lifecycle = {
  /** The server's id: a UUID, or the uid a hand-written manifest gave it. */
  id: string;
  /** The server's status word: `stopped` (also while its workspace and extensions are prepared), `starting`, `running`, `stopping` or `failed`. */
  status: "stopped" | "starting" | "running" | "stopping" | "failed";
  pid: number | null;
};

export type LifecycleEnvelope = {
  status: "success";
  /** What happened, naming the server: `server "Data pipeline" started on port 8012`. */
  message: string;
  data: Lifecycle;
};

export type Deleted = {
  status: "success";
  message: string;
  data: {
    /** The server's id: a UUID, or the uid a hand-written manifest gave it. */
    id: string;
  };
};

export type ExtensionResults = {
  status: "success";
  message: string;
  data: Lifecycle;
  /** Each extension the request named: Installed, Failed (with code-server's reason; the request still succeeds) or, with 202, Pending. */
  results: Array<{ id: string; state: "Installed" | "Failed" | "Pending"; version?: string; message?: string; }>;
};

export type WorkspaceCloned = { status: "success"; message: string; data: Lifecycle; workspace_path: string; };

export type ServerHealth = {
  status: "success";
  data: {
    /** The server's status word: `stopped` (also while its workspace and extensions are prepared), `starting`, `running`, `stopping` or `failed`. */
    status: "stopped" | "starting" | "running" | "stopping" | "failed";
    /** Whether the editor's /healthz answered. */
    http_healthy: boolean;
    cpu_percent: number;
    memory_mb: number;
    uptime_seconds: number;
    process_exists: boolean;
    /** Lines of its editor's output that the log rate limit kept out of its log entries since the service started (they are still in server.log). */
    log_lines_dropped: number;
  };
};

export type RefreshResult = {
  status: "success";
  /** The server's id: a UUID, or the uid a hand-written manifest gave it. */
  id: string;
  name: string;
  port: number | null;
  old_status: string;
  /** A status word, or `deleted` when the server went meanwhile. */
  new_status: string;
  /** Whether the recorded process exists, in words. */
  pid_status: string;
  /** What /healthz on the server's port answered, in words. */
  healthz_status: string;
  /** true when new_status differs from old_status. */
  updated: boolean;
};

export type RefreshAll = {
  status: "success";
  total_servers: number;
  /** How many servers' status changed. */
  updated: number;
  message: string;
  servers: RefreshResult[];
};

export type ServerLogs = {
  status: "success";
  data: {
    /** Lines `2026-11-22T06:00:01.123Z [INFO] [server] text`, oldest first. */
    logs: string[];
  };
};

export type Me = {
  status: "success";
  data: {
    /** The signed-in user, lower case, as owner and shared_with name people; null where no one signs in. */
    user: string | null;
    /** One of the config's admins. */
    admin: boolean;
    /** The config's access policy in force. */
    policy: "shared" | "owner";
    /** Requests name who sends them here (deployed, or DEVBOX_REQUIRE_IDENTITY=1); without it sharing has no effect. */
    sign_on: boolean;
  };
};

export type AccessEnvelope = {
  status: "success";
  message?: string;
  data: {
    /** Who created it (devbox.dev/owner); null when nobody signed in did. */
    owner: string | null;
    /** spec.access.sharedWith, lower case. */
    shared_with: string[];
    /** The requester reaches it because it is shared with them (not their own, and not as an admin). */
    shared: boolean;
    /** The requester may change the list (its owner, or an admin, whatever the policy). */
    can_change: boolean;
    /** The list takes effect here: people sign in and the config says access: owner. */
    effective: boolean;
    /** Why the list has no effect here, and what would give it one; null when it does. */
    warning: string | null;
  };
};

export type ServerEvents = {
  status: "success";
  data: {
    /** What recently happened to the server (phases, reasons, conditions), oldest first. */
    events: Array<{ time: string; type: "Normal" | "Warning"; reason: string; message: string; }>;
  };
};

/** A server's CPU and memory over time (GET /servers/{id}/usage). */
export type ServerUsage = {
  status: "success";
  data: {
    /** The window read (the one asked for, or the whole history kept). */
    window_seconds: number;
    /** The width of one point. */
    bucket_seconds: number;
    /** The start of the window. */
    from: string;
    /** The end of the window: now. */
    to: string;
    /** Oldest first; buckets with nothing in them are left out, so a gap means no sample. */
    points: Array<{
      /** The start of the bucket. */
      time: string;
      /** How many samples fell in the bucket. */
      samples: number;
      /** The least, the average and the most of the samples in the bucket, in percent of one core. */
      cpu_percent: { min: number; avg: number; max: number; };
      /** The least, the average and the most of the samples in the bucket, in MB (resident memory of the editor's processes). */
      memory_mb: { min: number; avg: number; max: number; };
    }>;
  };
};

/** The fleet over time (GET /usage). */
export type FleetUsage = {
  status: "success";
  data: {
    /** The window read (the one asked for, or the whole history kept). */
    window_seconds: number;
    /** The width of one point. */
    bucket_seconds: number;
    /** The start of the window. */
    from: string;
    /** The end of the window: now. */
    to: string;
    /** Editors stopped for idleness within the window. */
    idle_stops: number;
    /** Oldest first; buckets with nothing in them are left out, so a gap means no sample. */
    points: Array<{
      /** The start of the bucket. */
      time: string;
      /** How many samples fell in the bucket. */
      samples: number;
      /** null when no sample fell in the bucket (the service was not running). */
      running: { min: number; avg: number; max: number; } | null;
      /** null when no sample fell in the bucket (the service was not running). */
      memory_mb: { min: number; avg: number; max: number; } | null;
      /** Editors stopped for idleness (reason IdleTimeout) in the bucket. */
      idle_stops: number;
    }>;
  };
};

/** A server's forwarded ports (GET /servers/{id}/ports). */
export type ServerPorts = Array<{
  port: number;
  /** portsAttributes' label; null when none is given. */
  label: string | null;
  /** portsAttributes' protocol; `http` when none is given. */
  protocol: "http" | "https";
  /** portsAttributes' onAutoForward (notify, openBrowser, openPreview, silent, ignore); `notify`, the default, when none is given. */
  onAutoForward: string;
  /** In devcontainer.json's forwardPorts. */
  declared: boolean;
  /** A program of the server listens on it now (on a cluster, where only the declared ports are looked at: it accepts a connection at the Pod's address). */
  listening: boolean;
  /** Where it answers through the proxy: `/vscode/{port}/proxy/{forwarded_port}/`. */
  url: string;
}>;

export type ServerManifest = {
  status: "success";
  data: {
    /** The manifest file's path. */
    file: string;
    /** Its text as it is on disk. */
    yaml: string;
  };
};

export type ManifestEntry = {
  name: string;
  file: string;
  id: string | null;
  valid: boolean;
  errors: string[];
  /** What the controller noticed: a copied uid or status, a missing file or folder. */
  warnings: string[];
};

export type FileProblem = { file: string; line: number | null; column: number | null; problem: string; };

export type Template = {
  id: string;
  name: string;
  description: string;
  tab: string;
  extension_groups: string[];
  /** The same list as extension_groups, under the key existing clients read. */
  extensions_groups: string[];
  extensions: string[];
  settings: { [key: string]: unknown; };
  restart_policy: "Never" | "OnFailure" | "Always";
  thumbnail_url: string | null;
  github_url: string | null;
  icon_links: Array<{ lucide_icon: string; url: string; }>;
  version: string;
  workspace_source: null | { type: "git"; url: string; ref: string | null; } | { type: "archive"; path: string; };
};

export type Templates = {
  status: "success";
  /** Present when a template file is invalid. */
  errors?: FileProblem[];
  data: { tabs: Array<{ name: string; items: Template[]; }>; };
};

export type Config = {
  status: "success";
  source: {
    file: string | null;
    loaded_at: string;
    /** What is wrong with the config file now (the config in use is the last valid one). */
    errors: FileProblem[];
    /** Settings changed in the file that take effect at the next start. */
    pending_restart: string[];
  };
  data: {
    extension_groups: {
      [key: string]: {
        name?: string;
        description?: string;
        extensions: string[];
        user_settings?: { [key: string]: unknown; };
      };
    };
    server: {
      port_range: { min: number; max: number; };
      start_timeout_seconds: number;
      ready_timeout_seconds: number;
      stop_grace_seconds: number;
      default_restart_policy: string;
      git_schemes: string[];
      clone_timeout_seconds: number;
      max_upload_mb: number;
    };
    ui: {
      title: string;
      default_extension_groups: string[];
      max_upload_mb: number;
      archive_types: string[];
    };
    packaged_assets: { [key: string]: unknown; };
  };
};

export type SyncResult = {
  status: "success";
  message: string;
  data: {
    /** The templates repository's sync state; null when none is configured. */
    templates: { [key: string]: unknown; } | null;
    /** The manifests repository's sync state; null when none is configured. */
    manifests: { [key: string]: unknown; } | null;
  };
};

/** Beside these, one object per part that reports here: config, templates, git_sync, watch, logs, capacity, persistence, audit (the trail's newest `last_seq` and `last_hash`, where it is kept), and assistant and assistant_router when deployed. */
export type ServiceHealth = {
  status: "healthy" | "degraded";
  version: string;
  uptime_seconds: number;
  servers: number;
  /** The code-server binary in use. */
  editor: string;
  memory_mb: { rss: number; heap_used: number; heap_total: number; external: number; };
  /** Present when degraded: each names the file or setting and what to change. */
  problems?: string[];
  capacity?: CapacityHealth;
  [key: string]: unknown;
};

/** The `data:` of one server-sent event of GET /servers?watch=1. */
export type WatchEvent = {
  type: "ADDED" | "MODIFIED" | "DELETED" | "SYNCED";
  /** The server record; null for SYNCED. */
  object: ServerRecord | null;
};

/** One text frame of the log streams. */
export type LogMessage = {
  type: "log";
  /** The server's id: a UUID, or the uid a hand-written manifest gave it. */
  server_id: string;
  server_name: string;
  level: "INFO" | "WARN" | "ERROR";
  source: "server" | "controller";
  message: string;
  timestamp: string;
};

/** GET /health `capacity`: the fleet's limits and use, and each person's. */
export type CapacityHealth = {
  /** Editors running now. */
  running: number;
  /** Starts admitted whose editor does not run yet. */
  starting: number;
  /** capacity.maxRunning; null: no limit. */
  max_running: number | null;
  memory_used_mb: number;
  /** capacity.maxMemoryMb, as it applies here; null: no limit. */
  memory_limit_mb: number | null;
  memory_free_mb: number | null;
  /** Where the memory limit comes from, or why none applies. */
  memory_limit_source: string;
  /** What one more editor is counted at. */
  editor_estimate_mb: number;
  when_full: "refuse" | "stopIdlest";
  idle_after_seconds: number;
  /** Manifest names of the servers waiting for room (or for their owner's use to drop below a limit per person). */
  waiting: string[];
  per_person?: PerPersonUse;
};

/** The limits per person (the owner of a server) and each person's use. The config's admins are listed, marked exempt. */
export type PerPersonUse = {
  limits: {
    /** capacity.perPerson.runningEditors; null: no limit. */
    running_editors: number | null;
    /** capacity.perPerson.servers; null: no limit. */
    servers: number | null;
    /** capacity.perPerson.memoryMb; null: no limit. */
    memory_mb: number | null;
  };
  /** People with at least one server, those running the most first (then memory, servers, name); at most 100. */
  people: PersonUse[];
  /** How many people have servers (the list may be cut). */
  people_total: number;
};

export type PersonUse = {
  /** The owner (devbox.dev/owner), in lower case. */
  person: string;
  /** Their editors running or starting. */
  running: number;
  /** Their servers. */
  servers: number;
  /** Resident memory of their running editors at the last sample (an unsampled one at the estimate). */
  memory_mb: number;
  /** An admin: no limit per person applies. */
  exempt: boolean;
};

/** The `details` of a 409 QUOTA_EXCEEDED. */
export type QuotaRefusal = {
  limit: "capacity.perPerson.runningEditors" | "capacity.perPerson.servers" | "capacity.perPerson.memoryMb";
  person: string;
  /** The limit's value (MB for memoryMb). */
  allowed: number;
  /** What the person uses now (MB for memoryMb). */
  used: number;
  /** The person's servers that use the limit (at most 20). */
  servers: Array<{ id?: string; manifest: string; name: string; }>;
  /** How many servers use it in all. */
  total: number;
};

/** What was honoured of the workspace's devcontainer.json (status.devcontainer); docs/devcontainer.md says what is and is not. */
export type Devcontainer = {
  /** `applied`: the plan is in effect; `ignored`: spec.devcontainer says ignore; `none`: no file in the workspace; `invalid`: the file could not be read (message says where and why). */
  state: "applied" | "ignored" | "none" | "invalid";
  message?: string;
  plan?: DevcontainerPlan;
  /** Where each lifecycle command stands for this server. */
  lifecycle?: {
    onCreateCommand?: DevcontainerLifecycleState;
    updateContentCommand?: DevcontainerLifecycleState;
    postCreateCommand?: DevcontainerLifecycleState;
    postStartCommand?: DevcontainerLifecycleState;
    postAttachCommand?: DevcontainerLifecycleState;
  };
  /** The WorkspaceReady transition the file was read after. */
  readAfter?: string;
  /** What the running editor was started with of the plan, as a key. */
  startedWith?: string;
  /** The workspace the once-per-workspace commands ran for. */
  workspaceKey?: string;
};

export type DevcontainerPlan = {
  /** The file, relative to the workspace. */
  path: string;
  /** The hash of its bytes. */
  sha256: string;
  /** customizations.vscode.extensions, installed like spec.extensions (the manifest's win for the same extension). */
  extensions: string[];
  /** customizations.vscode.settings, under spec.settings. */
  settings: { [key: string]: unknown; };
  containerEnv: { [key: string]: string; };
  remoteEnv: { [key: string]: string | null; };
  /** The lifecycle commands given, by name (the object form's commands run in parallel). */
  lifecycle: {
    onCreateCommand?: {
      name: "onCreateCommand" | "updateContentCommand" | "postCreateCommand" | "postStartCommand" | "postAttachCommand";
      commands: Array<{
        label?: string;
        command: {
          /** Run by /bin/sh -c. */
          shell: string;
        } | {
          /** A program and its arguments, no shell. */
          argv: string[];
        };
      }>;
    };
    updateContentCommand?: {
      name: "onCreateCommand" | "updateContentCommand" | "postCreateCommand" | "postStartCommand" | "postAttachCommand";
      commands: Array<{
        label?: string;
        command: {
          /** Run by /bin/sh -c. */
          shell: string;
        } | {
          /** A program and its arguments, no shell. */
          argv: string[];
        };
      }>;
    };
    postCreateCommand?: {
      name: "onCreateCommand" | "updateContentCommand" | "postCreateCommand" | "postStartCommand" | "postAttachCommand";
      commands: Array<{
        label?: string;
        command: {
          /** Run by /bin/sh -c. */
          shell: string;
        } | {
          /** A program and its arguments, no shell. */
          argv: string[];
        };
      }>;
    };
    postStartCommand?: {
      name: "onCreateCommand" | "updateContentCommand" | "postCreateCommand" | "postStartCommand" | "postAttachCommand";
      commands: Array<{
        label?: string;
        command: {
          /** Run by /bin/sh -c. */
          shell: string;
        } | {
          /** A program and its arguments, no shell. */
          argv: string[];
        };
      }>;
    };
    postAttachCommand?: {
      name: "onCreateCommand" | "updateContentCommand" | "postCreateCommand" | "postStartCommand" | "postAttachCommand";
      commands: Array<{
        label?: string;
        command: {
          /** Run by /bin/sh -c. */
          shell: string;
        } | {
          /** A program and its arguments, no shell. */
          argv: string[];
        };
      }>;
    };
  };
  /** The last lifecycle command the editor waits for before it starts. */
  waitFor: "onCreateCommand" | "updateContentCommand" | "postCreateCommand" | "postStartCommand" | "postAttachCommand";
  forwardPorts: Array<{ port: number; label?: string; protocol?: "http" | "https"; onAutoForward?: string; }>;
  hostRequirements?: { cpus?: number; memoryBytes?: number; storageBytes?: number; };
  /** The editor's image on a runtime that runs images (Kubernetes). */
  image?: string;
  /** Each field not honoured, and why. */
  warnings: string[];
};

export type DevcontainerLifecycleState = {
  state: "Running" | "Succeeded" | "Failed" | "Skipped";
  exitCode?: number | null;
  message?: string;
  at: string;
  /** For Failed and Skipped: the devcontainer.json, spec and restart request it failed under, as a key; a change of one runs it again. */
  under?: string;
};

// The response shapes of the REST API as JSON Schemas (OpenAPI 3.1 speaks JSON Schema 2020-12),
// field for field as src/api/views.ts and the route handlers send them. The request bodies are not
// here: they are the files of schemas/api/, read as they are (document.ts).

import { AUDIT_SCHEMAS } from './paths-audit.ts';
import { DEVCONTAINER_SCHEMAS } from './shapes-devcontainer.ts';
import { QUOTA_SCHEMAS } from './shapes-quota.ts';
import { PORTS_SCHEMAS } from './paths-ports.ts';
import { SHARING_SCHEMAS } from './paths-sharing.ts';
import { USAGE_SCHEMAS } from './paths-usage.ts';

type Schema = Record<string, unknown>;

export const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
const nullable = (type: string, more: Schema = {}): Schema => ({ type: [type, 'null'], ...more });
const strings: Schema = { type: 'array', items: { type: 'string' } };
const object = (properties: Record<string, Schema>, required: string[] = Object.keys(properties), more: Schema = {}): Schema =>
  ({ type: 'object', required, properties, ...more });
/** `{status: "success", data}`: the envelope most answers use. */
const envelope = (data: Schema, more: Record<string, Schema> = {}, required: string[] = []): Schema =>
  object({ status: { const: 'success' }, ...more, data }, ['status', ...required, 'data']);

const STATUS = {
  enum: ['stopped', 'starting', 'running', 'stopping', 'failed'],
  description: 'The server\'s status word: `stopped` (also while its workspace and extensions are prepared), `starting`, `running`, `stopping` or `failed`.',
};
const PHASE = {
  enum: ['Pending', 'Provisioning', 'Stopped', 'Starting', 'Running', 'Stopping', 'Failed', 'Terminating'],
  description: 'The controller\'s phase (status.phase of the manifest).',
};
const UID = { type: 'string', description: 'The server\'s id: a UUID, or the uid a hand-written manifest gave it.' };
const TIME = { type: 'string', format: 'date-time' };

export const SCHEMAS: Record<string, Schema> = {
  ...AUDIT_SCHEMAS,
  Error: object({
    status: { const: 'error' },
    error: object({
      code: { type: 'string', description: 'A stable code, such as SERVER_NOT_FOUND, INVALID_BODY or PORT_TAKEN.' },
      message: { type: 'string', description: 'What went wrong and what to change.' },
      details: { description: 'More about the error where there is more, such as `{problems: [...]}` for an invalid body.' },
    }, ['code', 'message']),
  }, ['status', 'error'], { description: 'Every refusal and failure, from every part of the service (API, proxy, WebSocket handshakes).' }),

  Condition: object({
    type: { type: 'string', description: 'WorkspaceReady, ExtensionsInstalled, Ready…' },
    status: { enum: ['True', 'False', 'Unknown'] },
    reason: { type: 'string' },
    message: { type: 'string' },
    lastTransitionTime: TIME,
  }, ['type', 'status', 'lastTransitionTime']),

  ExtensionStatus: object({
    id: { type: 'string' },
    state: { enum: ['Installed', 'Failed'] },
    version: { type: 'string' },
    message: { type: 'string', description: 'Why the install failed.' },
  }, ['id', 'state']),

  ServerRecord: object({
    id: UID,
    name: { type: 'string', description: 'The display name (spec.displayName, else the manifest name).' },
    port: nullable('integer', { description: 'The editor\'s port; null until one is assigned.' }),
    workspace_path: nullable('string', { description: 'The workspace folder; null until it is made.' }),
    extensions: { ...strings, description: 'Extension ids of spec.extensions.' },
    status: STATUS,
    pid: nullable('integer', { description: 'null when no editor process runs.' }),
    start_time: nullable('string', { format: 'date-time', description: 'When the running editor started; null when none runs.' }),
    uptime: { type: 'number', description: 'Seconds since start_time, fractional; 0 when none runs.' },
    cpu_percent: { type: 'number' },
    memory_mb: { type: 'number' },
    manifest: { type: 'string', description: 'The manifest name (metadata.name), unique like the id.' },
    owner: nullable('string', { description: 'Who created it (the devbox.dev/owner annotation); null when nobody signed in did.' }),
    shared_with: { ...strings, description: 'Who else may open and use it under `access: owner` (spec.access.sharedWith), lower case; empty when nobody. GET /servers/{id}/access says whether it takes effect.' },
    phase: PHASE,
    reason: nullable('string'),
    message: nullable('string'),
    restart_policy: { enum: ['Never', 'OnFailure', 'Always'] },
    idle_timeout_seconds: nullable('number', { description: 'spec.idleTimeoutSeconds; null: the config\'s editor.idleTimeoutSeconds applies.' }),
    idle_stopped_at: nullable('string', { format: 'date-time', description: 'When the controller stopped it for idleness.' }),
    resources: {
      anyOf: [ref('Resources'), { type: 'null' }],
      description: 'spec.resources: CPU and memory in Kubernetes\' shape, over the config\'s defaults (the Kubernetes runtime enforces them, local processes ignore them); null when the manifest gives none.',
    },
    extension_status: { type: 'array', items: ref('ExtensionStatus') },
    conditions: { type: 'array', items: ref('Condition') },
    generation: nullable('integer', { description: 'Spec changes counted (metadata.generation).' }),
    observed_generation: nullable('integer', { description: 'The last generation the controller has acted on.' }),
    manifest_errors: { ...strings, description: 'Present when the manifest file is invalid: its problems.' },
    persistence: {
      anyOf: [ref('PersistenceState'), { type: 'null' }],
      description: 'Its snapshots at the persistence target (DEVBOX_PERSIST_TO); null when the service keeps none.',
    },
    devcontainer: {
      anyOf: [ref('Devcontainer'), { type: 'null' }],
      description: 'What it took from its workspace\'s devcontainer.json (status.devcontainer); null until the file was looked for (before the first start).',
    },
  }, [
    'id', 'name', 'port', 'workspace_path', 'extensions', 'status', 'pid', 'start_time', 'uptime', 'cpu_percent', 'memory_mb',
    'manifest', 'owner', 'phase', 'reason', 'message', 'restart_policy', 'idle_timeout_seconds', 'idle_stopped_at', 'resources',
    'extension_status', 'conditions', 'generation', 'observed_generation', 'persistence',
    'shared_with', 'devcontainer',
  ]),

  Resources: object({
    requests: ref('ResourceAmounts'),
    limits: ref('ResourceAmounts'),
  }, []),
  ResourceAmounts: object({
    cpu: { type: 'string', description: 'A Kubernetes quantity: "500m", "2".' },
    memory: { type: 'string', description: 'A Kubernetes quantity: "512Mi", "2Gi".' },
  }, []),

  PersistenceState: object({
    last_snapshot_at: nullable('string', { format: 'date-time', description: 'When the last snapshot was committed; null before the first.' }),
    last_snapshot_id: nullable('string'),
    size_bytes: nullable('integer', { description: 'Bytes of the files the last snapshot kept.' }),
    files: nullable('integer', { description: 'Files the last snapshot kept.' }),
    last_error: nullable('string', { description: 'Why the last attempt failed, and what to do; null after a success.' }),
    in_progress: { enum: ['snapshot', 'restore', null], description: 'What is under way now: a snapshot, a restore, or nothing (null).' },
  }),

  Snapshot: object({
    id: { type: 'string', description: 'Sortable by time.' },
    created_at: TIME,
    reason: { type: 'string', description: 'What took it: stop, interval, api, shutdown…' },
    files: { type: 'integer' },
    bytes: { type: 'integer', description: 'Bytes of every file it keeps.' },
    uploaded_bytes: { type: 'integer', description: 'Bytes it added to the target (new content only).' },
    duration_ms: { type: 'integer' },
    skipped: {
      type: 'array',
      items: object({ root: { enum: ['workspace', 'user'] }, path: { type: 'string' }, reason: { type: 'string' } }),
      description: 'What was not kept, and why: FIFOs, sockets, devices, unreadable files; files that changed while read are kept as read and listed.',
    },
  }),
  Snapshots: envelope(object({ snapshots: { type: 'array', items: ref('Snapshot'), description: 'Newest first.' } })),
  SnapshotTaken: envelope(ref('Snapshot'), { message: { type: 'string' } }, ['message']),
  SnapshotRestored: envelope(object({
    snapshot: ref('Snapshot'),
    files: { type: 'integer' },
    bytes: { type: 'integer' },
    kept_newer: { ...strings, description: 'Local files newer than the snapshot, left as they were.' },
    corrupted: { ...strings, description: 'Files whose stored content failed its hash check: not restored.' },
  }), { message: { type: 'string' } }, ['message']),
  DeletedServers: envelope(object({
    servers: {
      type: 'array',
      items: object({ name: { type: 'string', description: 'The manifest name.' }, id: UID, deleted_at: TIME, latest: ref('Snapshot') }),
      description: 'Servers deleted within persistence.retainDeletedDays, which POST /snapshots/deleted/{name}/restore brings back.',
    },
  })),

  CreatedServer: object({
    id: UID,
    name: { type: 'string' },
    port: nullable('integer'),
    workspace_path: nullable('string'),
    extensions: strings,
    status: STATUS,
    pid: nullable('integer', { description: 'null: a new server is stopped.' }),
  }, undefined, { description: 'The create operations\' answer: a subset of the server record.' }),

  WorkspaceCreated: object({
    id: UID,
    name: { type: 'string' },
    port: nullable('integer'),
    workspace_path: nullable('string'),
    status: STATUS,
  }),

  Lifecycle: object({
    id: UID,
    status: STATUS,
    pid: nullable('integer'),
  }, undefined, { description: '`data` of start, stop, restart and the multi-step routes.' }),

  LifecycleEnvelope: object({
    status: { const: 'success' },
    message: { type: 'string', description: 'What happened, naming the server: `server "Data pipeline" started on port 8012`.' },
    data: ref('Lifecycle'),
  }),

  Deleted: object({
    status: { const: 'success' },
    message: { type: 'string' },
    data: object({ id: UID }),
  }),

  ExtensionResults: object({
    status: { const: 'success' },
    message: { type: 'string' },
    data: ref('Lifecycle'),
    results: {
      type: 'array',
      description: 'Each extension the request named: Installed, Failed (with code-server\'s reason; the request still succeeds) or, with 202, Pending.',
      items: object({
        id: { type: 'string' },
        state: { enum: ['Installed', 'Failed', 'Pending'] },
        version: { type: 'string' },
        message: { type: 'string' },
      }, ['id', 'state']),
    },
  }),

  WorkspaceCloned: object({
    status: { const: 'success' },
    message: { type: 'string' },
    data: ref('Lifecycle'),
    workspace_path: { type: 'string' },
  }),

  ServerHealth: envelope(object({
    status: STATUS,
    http_healthy: { type: 'boolean', description: 'Whether the editor\'s /healthz answered.' },
    cpu_percent: { type: 'number' },
    memory_mb: { type: 'number' },
    uptime_seconds: { type: 'number' },
    process_exists: { type: 'boolean' },
    log_lines_dropped: { type: 'integer', description: 'Lines of its editor\'s output that the log rate limit kept out of its log entries since the service started (they are still in server.log).' },
  })),

  RefreshResult: object({
    status: { const: 'success' },
    id: UID,
    name: { type: 'string' },
    port: nullable('integer'),
    old_status: { type: 'string' },
    new_status: { type: 'string', description: 'A status word, or `deleted` when the server went meanwhile.' },
    pid_status: { type: 'string', description: 'Whether the recorded process exists, in words.' },
    healthz_status: { type: 'string', description: 'What /healthz on the server\'s port answered, in words.' },
    updated: { type: 'boolean', description: 'true when new_status differs from old_status.' },
  }),

  RefreshAll: object({
    status: { const: 'success' },
    total_servers: { type: 'integer' },
    updated: { type: 'integer', description: 'How many servers\' status changed.' },
    message: { type: 'string' },
    servers: { type: 'array', items: ref('RefreshResult') },
  }),

  ServerLogs: envelope(object({
    logs: { ...strings, description: 'Lines `2026-11-22T06:00:01.123Z [INFO] [server] text`, oldest first.' },
  })),

  ...SHARING_SCHEMAS,
  ServerEvents: envelope(object({
    events: {
      type: 'array',
      description: 'What recently happened to the server (phases, reasons, conditions), oldest first.',
      items: object({ time: TIME, type: { enum: ['Normal', 'Warning'] }, reason: { type: 'string' }, message: { type: 'string' } }),
    },
  })),

  ...USAGE_SCHEMAS,
  ...PORTS_SCHEMAS,

  ServerManifest: envelope(object({
    file: { type: 'string', description: 'The manifest file\'s path.' },
    yaml: { type: 'string', description: 'Its text as it is on disk.' },
  })),

  ManifestEntry: object({
    name: { type: 'string' },
    file: { type: 'string' },
    id: nullable('string'),
    valid: { type: 'boolean' },
    errors: strings,
    warnings: { ...strings, description: 'What the controller noticed: a copied uid or status, a missing file or folder.' },
  }),

  FileProblem: object({
    file: { type: 'string' },
    line: nullable('integer'),
    column: nullable('integer'),
    problem: { type: 'string' },
  }),

  Template: object({
    id: { type: 'string' },
    name: { type: 'string' },
    description: { type: 'string' },
    tab: { type: 'string' },
    extension_groups: strings,
    extensions_groups: { ...strings, description: 'The same list as extension_groups, under the key existing clients read.' },
    extensions: strings,
    settings: { type: 'object' },
    restart_policy: { enum: ['Never', 'OnFailure', 'Always'] },
    thumbnail_url: nullable('string'),
    github_url: nullable('string'),
    icon_links: { type: 'array', items: object({ lucide_icon: { type: 'string' }, url: { type: 'string' } }) },
    version: { type: 'string' },
    workspace_source: {
      oneOf: [
        { type: 'null' },
        object({ type: { const: 'git' }, url: { type: 'string' }, ref: nullable('string') }),
        object({ type: { const: 'archive' }, path: { type: 'string' } }),
      ],
    },
  }),

  Templates: envelope(object({
    tabs: { type: 'array', items: object({ name: { type: 'string' }, items: { type: 'array', items: ref('Template') } }) },
  }), { errors: { type: 'array', items: ref('FileProblem'), description: 'Present when a template file is invalid.' } }),

  Config: envelope(object({
    extension_groups: {
      type: 'object',
      additionalProperties: object({ name: { type: 'string' }, description: { type: 'string' }, extensions: strings, user_settings: { type: 'object' } }, ['extensions']),
    },
    server: object({
      port_range: object({ min: { type: 'integer' }, max: { type: 'integer' } }),
      start_timeout_seconds: { type: 'number' },
      ready_timeout_seconds: { type: 'number' },
      stop_grace_seconds: { type: 'number' },
      default_restart_policy: { type: 'string' },
      git_schemes: strings,
      clone_timeout_seconds: { type: 'number' },
      max_upload_mb: { type: 'number' },
    }),
    ui: object({
      title: { type: 'string' },
      default_extension_groups: strings,
      max_upload_mb: { type: 'number' },
      archive_types: strings,
    }),
    packaged_assets: { type: 'object' },
  }), {
    source: object({
      file: nullable('string'),
      loaded_at: TIME,
      errors: { type: 'array', items: ref('FileProblem'), description: 'What is wrong with the config file now (the config in use is the last valid one).' },
      pending_restart: { ...strings, description: 'Settings changed in the file that take effect at the next start.' },
    }),
  }, ['source']),

  SyncResult: object({
    status: { const: 'success' },
    message: { type: 'string' },
    data: object({
      templates: nullable('object', { description: 'The templates repository\'s sync state; null when none is configured.' }),
      manifests: nullable('object', { description: 'The manifests repository\'s sync state; null when none is configured.' }),
    }),
  }),

  ServiceHealth: object({
    status: { enum: ['healthy', 'degraded'] },
    version: { type: 'string' },
    uptime_seconds: { type: 'number' },
    servers: { type: 'integer' },
    editor: { type: 'string', description: 'The code-server binary in use.' },
    memory_mb: object({ rss: { type: 'number' }, heap_used: { type: 'number' }, heap_total: { type: 'number' }, external: { type: 'number' } }),
    problems: { ...strings, description: 'Present when degraded: each names the file or setting and what to change.' },
    capacity: ref('CapacityHealth'),
  }, ['status', 'version', 'uptime_seconds', 'servers', 'editor', 'memory_mb'], {
    description: 'Beside these, one object per part that reports here: config, templates, git_sync, watch, logs, capacity, persistence, audit (the trail\'s newest `last_seq` and `last_hash`, where it is kept), and assistant and assistant_router when deployed.',
    additionalProperties: { type: 'object' },
  }),

  WatchEvent: object({
    type: { enum: ['ADDED', 'MODIFIED', 'DELETED', 'SYNCED'] },
    object: { anyOf: [ref('ServerRecord'), { type: 'null' }], description: 'The server record; null for SYNCED.' },
  }, undefined, { description: 'The `data:` of one server-sent event of GET /servers?watch=1.' }),

  LogMessage: object({
    type: { const: 'log' },
    server_id: UID,
    server_name: { type: 'string' },
    level: { enum: ['INFO', 'WARN', 'ERROR'] },
    source: { enum: ['server', 'controller'] },
    message: { type: 'string' },
    timestamp: TIME,
  }, undefined, { description: 'One text frame of the log streams.' }),

  ...QUOTA_SCHEMAS,
  ...DEVCONTAINER_SCHEMAS,
};

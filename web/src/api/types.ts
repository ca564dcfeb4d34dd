// The API's shapes, as the service answers them (src/api/views.ts and the routes).

export type StatusWord = 'provisioning' | 'stopped' | 'starting' | 'running' | 'stopping' | 'failed';

export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

export interface ExtensionState {
  id: string;
  state?: string;
  version?: string;
  error?: string;
  /** Why it failed (code-server's words), as the service records it. */
  message?: string;
  [key: string]: unknown;
}

/** One server, as GET /servers and the watch stream give it. */
export interface ServerRecord {
  id: string;
  name: string;
  port: number | null;
  workspace_path: string | null;
  extensions: string[];
  status: StatusWord;
  pid: number | null;
  start_time: string | null;
  uptime: number;
  cpu_percent: number;
  memory_mb: number;
  manifest: string;
  owner: string | null;
  phase: string;
  reason: string | null;
  message: string | null;
  restart_policy: string;
  /** spec.resources in Kubernetes' shape; null when the manifest gives none. */
  resources?: Resources | null;
  extension_status: ExtensionState[];
  generation: number | null;
  observed_generation: number | null;
  manifest_errors?: string[];
  conditions?: Condition[];
  /** Its snapshots at the persistence target; null when the service keeps none. */
  persistence?: PersistenceState | null;
}

export interface Resources {
  requests?: { cpu?: string; memory?: string };
  limits?: { cpu?: string; memory?: string };
}

export interface PersistenceState {
  last_snapshot_at: string | null;
  last_snapshot_id: string | null;
  size_bytes: number | null;
  files: number | null;
  last_error: string | null;
  in_progress: 'snapshot' | 'restore' | null;
}

/** One message of GET /servers?watch=1. */
export interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'SYNCED';
  object: ServerRecord | null;
}

export interface ServerEvent {
  time: string;
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

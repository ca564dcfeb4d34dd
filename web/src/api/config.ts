// GET /config: the extension groups a new server can use, the UI's defaults and the server limits.
import { request } from './http.ts';

export interface ExtensionGroup {
  name: string;
  description?: string;
  extensions: string[];
  user_settings?: Record<string, unknown>;
}

export interface ConfigProblem {
  file: string;
  line: number | null;
  column: number | null;
  problem: string;
}

export interface ServiceConfig {
  extension_groups: Record<string, ExtensionGroup>;
  server: {
    port_range: { min: number; max: number };
    start_timeout_seconds: number;
    ready_timeout_seconds: number;
    stop_grace_seconds: number;
    default_restart_policy: string;
    git_schemes: string[];
    clone_timeout_seconds: number;
    max_upload_mb: number;
  };
  ui: {
    title?: string;
    default_extension_groups?: string[];
    max_upload_mb?: number;
    archive_types?: string[];
  };
  packaged_assets: unknown;
}

export interface ConfigAnswer {
  status: 'success';
  data: ServiceConfig;
  source: { file: string | null; loaded_at: string; errors: ConfigProblem[]; pending_restart: string[] };
}

/** The config in use (the service re-reads its file live, so ask again when it matters). */
export function getConfig(): Promise<ConfigAnswer> {
  return request<ConfigAnswer>('GET', 'config');
}

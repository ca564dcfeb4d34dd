// The servers' REST calls: lifecycle, refresh, a server's events and manifest, and the service's
// health. The list itself comes from the watch stream (watch.ts), which the store keeps.
import { request } from './http.ts';
import type { ServerEvent, ServerRecord, StatusWord } from './types.ts';

/** What start, stop and restart answer. */
export interface LifecycleAnswer {
  status: 'success';
  message: string;
  data: { id: string; status: StatusWord; pid: number | null };
}

export interface DeleteAnswer {
  status: 'success';
  message: string;
  data: { id: string };
}

export interface RefreshResult {
  status: 'success';
  id: string;
  name: string;
  port: number | null;
  old_status: StatusWord;
  new_status: StatusWord;
  pid_status: string;
  healthz_status: string;
  updated: boolean;
}

export interface RefreshAllAnswer {
  status: 'success';
  total_servers: number;
  updated: number;
  message: string;
  servers: RefreshResult[];
}

/** GET /health: the fixed fields, then one section per part of the service that reports. */
export interface ServiceHealth {
  status: 'healthy' | 'degraded';
  version?: string;
  uptime_seconds: number;
  servers: number;
  editor: string;
  memory_mb: { rss: number; heap_used: number; heap_total: number; external: number };
  problems?: string[];
  [section: string]: unknown;
}

const path = (id: string, rest = '') => `servers/${encodeURIComponent(id)}${rest}`;

export const listServers = () => request<ServerRecord[]>('GET', 'servers');
export const getServer = (id: string) => request<ServerRecord>('GET', path(id));
export const startServer = (id: string) => request<LifecycleAnswer>('POST', path(id, '/start'));
export const stopServer = (id: string) => request<LifecycleAnswer>('POST', path(id, '/stop'));
export const restartServer = (id: string) => request<LifecycleAnswer>('POST', path(id, '/restart'));
export const deleteServer = (id: string) => request<DeleteAnswer>('DELETE', path(id));
export const refreshServer = (id: string) => request<RefreshResult>('POST', path(id, '/refresh-status'));
export const refreshAll = () => request<RefreshAllAnswer>('POST', 'servers/refresh-all');

/** The server's recent events, newest last as the service keeps them. */
export async function getEvents(id: string): Promise<ServerEvent[]> {
  const answer = await request<{ data: { events: ServerEvent[] } }>('GET', path(id, '/events'));
  return answer.data?.events ?? [];
}

/** The server's manifest file as written (YAML text). */
export async function getManifest(id: string): Promise<string> {
  const answer = await request<{ data: { yaml: string } }>('GET', path(id, '/manifest'));
  return answer.data?.yaml ?? '';
}

export const getHealth = () => request<ServiceHealth>('GET', 'health');

/** Keeps the server's work now (an incremental snapshot at the persistence target). */
export const snapshotServer = (id: string) => request<{ status: 'success'; message: string }>('POST', path(id, '/snapshot'));

/** The editor's address for a port, relative to the page (works under any path prefix). */
export const editorUrl = (port: number) => `vscode/${port}/`;

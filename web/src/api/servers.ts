// The servers' REST calls: lifecycle, refresh, a server's events and manifest, and the service's
// health. The list itself comes from the watch stream (watch.ts), which the store keeps.
import { request } from './http.ts';
import type {
  DeleteAnswer, LifecycleAnswer, RefreshAllAnswer, RefreshResult, ServerEvent, ServerRecord, ServiceHealth, SnapshotTaken,
} from './types.ts';

export type { ServiceHealth };

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
export const snapshotServer = (id: string) => request<SnapshotTaken>('POST', path(id, '/snapshot'));

/** The editor's address for a port, relative to the page (works under any path prefix). */
export const editorUrl = (port: number) => `vscode/${port}/`;

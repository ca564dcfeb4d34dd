// GET /config: the extension groups a new server can use, the UI's defaults and the server limits.
import { request } from './http.ts';
import type { ConfigAnswer, ServiceConfig } from './types.ts';

export type { ServiceConfig };

/** The config in use (the service re-reads its file live, so ask again when it matters). */
export function getConfig(): Promise<ConfigAnswer> {
  return request<ConfigAnswer>('GET', 'config');
}

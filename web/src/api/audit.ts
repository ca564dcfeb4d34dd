// The audit trail's calls: a server's history a page at a time (GET /servers/{id}/audit), newest first.
import { request } from './http.ts';
import type * as api from './openapi-types.ts';

export type AuditEntry = api.AuditEntry;
export type AuditPage = api.AuditPage;

/** One page of the server's history; `cursor` is the previous page's next_cursor. */
export function getServerAudit(id: string, cursor?: string, limit = 20): Promise<AuditPage> {
  const query = new URLSearchParams({ limit: String(limit), ...(cursor ? { cursor } : {}) });
  return request<AuditPage>('GET', `servers/${encodeURIComponent(id)}/audit?${query}`);
}

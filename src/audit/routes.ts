// GET /audit, GET /servers/{id}/audit and GET /audit/verify: the trail read a page at a time,
// newest first, filtered; and its chain checked. Admins, a local run and `access: shared` see every
// entry; a signed-in person sees the entries of the servers they may see, and their own acts on
// servers since deleted.
import { Router, type Request } from 'express';
import type { ServerAccess } from '../api/access.ts';
import { apiError, notFound } from '../core/error-catalogue.ts';
import type { ServerIndex } from '../index/server-index.ts';
import type { AuditLog } from './audit-log.ts';
import type { AuditEntry } from './entry.ts';
import { readPage, type AuditFilter } from './query.ts';
import { verifyAuditDir } from './verify.ts';

export const MAX_AUDIT_PAGE = 500;
const DEFAULT_AUDIT_PAGE = 50;

export interface AuditRoutesDeps {
  audit: AuditLog;
  index: ServerIndex;
  access: ServerAccess;
}

export function auditRouter(deps: AuditRoutesDeps): Router {
  const router = Router();
  const { audit, index, access } = deps;

  /** Which entries the request may read: undefined for all of them. */
  const visibleTo = (req: Request): ((entry: AuditEntry) => boolean) | undefined => {
    const filter = access.filterFor(req);
    if (!filter) return undefined;
    const who = access.requester(req.headers);
    const user = who.local ? undefined : who.user;
    return (entry) => {
      const name = entry.server_name ?? (entry.server_id ? index.nameOfUid(entry.server_id) : undefined);
      const named = name === undefined ? undefined : index.serverNamed(name);
      // A later server given the same name is not the one the entry is about.
      const server = named && (!entry.server_id || named.metadata.uid === entry.server_id) ? named : undefined;
      if (server !== undefined) return filter(server);
      // A server that is gone is for admins, and for whoever changed it while they could (a
      // refusal is not shown: it would name a server the person was never let see).
      return user !== undefined && entry.actor === user && entry.outcome === 'ok';
    };
  };

  const page = async (req: Request, fixed: AuditFilter = {}) => {
    const query = readQuery(req);
    const visible = visibleTo(req);
    const result = await readPage(audit.dir, { ...query.filter, ...fixed }, query.limit, query.before, visible);
    return { ...result, last_seq: audit.state().last_seq, last_hash: audit.state().last_hash };
  };

  router.get('/audit', async (req, res) => {
    res.json(await page(req));
  });

  // Says whether the chain holds and where it breaks (a file, a line, a seq), never an entry's
  // content: anyone may ask. One walk at a time: callers meanwhile share its answer.
  let walking: Promise<unknown> | undefined;
  router.get('/audit/verify', async (_req, res) => {
    walking ??= verifyAuditDir(audit.dir).finally(() => (walking = undefined));
    res.json(await walking);
  });

  router.get('/servers/:id/audit', async (req, res) => {
    const id = String(req.params.id);
    const name = index.nameOfUid(id);
    const server = name === undefined ? undefined : index.serverNamed(name);
    if (!server || !access.sees(req, server)) throw notFound(id);
    // By id: a later server given the same name has its own history.
    res.json(await page(req, { server: id, unnamedAs: name }));
  });

  return router;
}

const ONE_OF = new Set(['server', 'actor', 'action', 'door', 'since', 'until', 'limit', 'cursor']);

/** The query's filter and page, each checked: 400 INVALID_PAGE naming the parameter and what to give. */
function readQuery(req: Request): { filter: AuditFilter; limit: number; before: number | undefined } {
  const value = (key: string): string | undefined => {
    const raw = req.query[key];
    if (raw === undefined) return undefined;
    if (typeof raw !== 'string') throw apiError('INVALID_PAGE', { param: key, problem: 'is given more than once: give it once' });
    return raw;
  };
  for (const key of Object.keys(req.query)) {
    if (!ONE_OF.has(key)) throw apiError('INVALID_PAGE', { param: key, problem: `is not a filter of GET /audit: use ${[...ONE_OF].join(', ')}` });
  }
  const filter: AuditFilter = {};
  const server = value('server');
  if (server) filter.server = server;
  const actor = value('actor');
  if (actor) filter.actor = actor;
  const action = value('action');
  if (action) filter.actions = action.split(',').map((a) => a.trim()).filter(Boolean);
  const door = value('door');
  if (door) filter.door = door;
  for (const key of ['since', 'until'] as const) {
    const time = value(key);
    if (time === undefined) continue;
    if (Number.isNaN(Date.parse(time))) throw apiError('INVALID_PAGE', { param: key, problem: `must be an ISO time such as 2026-11-29T14:00:00Z, not ${JSON.stringify(time)}` });
    filter[key] = time;
  }
  const limitText = value('limit');
  const limit = limitText === undefined ? DEFAULT_AUDIT_PAGE : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_AUDIT_PAGE) {
    throw apiError('INVALID_PAGE', { param: 'limit', problem: `must be a whole number from 1 to ${MAX_AUDIT_PAGE}, not ${JSON.stringify(limitText)}` });
  }
  const cursor = value('cursor');
  const before = cursor === undefined ? undefined : Number(cursor);
  if (before !== undefined && (!Number.isInteger(before) || before < 1)) {
    throw apiError('INVALID_PAGE', { param: 'cursor', problem: 'is not a cursor this service gave: use next_cursor of the previous page, or leave it out for the newest entries' });
  }
  return { filter, limit, before };
}

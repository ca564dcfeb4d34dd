// Records the API's changes in the audit trail from one middleware, so no route needs to know of
// it: each request that changes a server is matched to an action when it arrives, and the entry
// is written once its answer is finished (the outcome known: done, refused with the error code,
// or failed). The server's name is taken when the request arrives, as a delete removes it.
import type { IncomingHttpHeaders } from 'node:http';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { ServerIndex } from '../index/server-index.ts';
import type { AuditDoor, AuditInput, AuditOutcome } from './entry.ts';

/** The header the dashboard sends on its fetches, so its changes are told from other API clients'. */
export const CLIENT_HEADER = 'x-devbox-client';

/** A route that changes something: its method, its path (the first group, when there is one, is the server's id) and the action it records. */
export interface RouteAction {
  method: string;
  path: RegExp;
  action: string;
  /** A short line from the request (its body, already parsed when the answer is written). */
  detail?: (req: Request) => string | undefined;
}

const list = (value: unknown): string => (Array.isArray(value) ? value.filter((v) => typeof v === 'string').join(', ') : '');
const field = (value: unknown): string | undefined => (typeof value === 'string' && value.length <= 200 ? value : undefined);

/** The routes that change something, and the action each records. */
const ROUTES: readonly RouteAction[] = [
  { method: 'POST', path: /^\/servers\/?$/, action: 'create', detail: (req) => createDetail(req.body) },
  { method: 'POST', path: /^\/servers\/create-metadata\/?$/, action: 'create', detail: () => 'in several steps' },
  { method: 'POST', path: /^\/servers\/create-with-workspace\/?$/, action: 'create', detail: (req) => sourceDetail(req.body) },
  { method: 'POST', path: /^\/servers\/create-from-template\/?$/, action: 'create', detail: (req) => withPrefix('template ', field((req.body as { template?: unknown })?.template)) },
  { method: 'POST', path: /^\/servers\/([^/]+)\/start\/?$/, action: 'start' },
  { method: 'POST', path: /^\/servers\/([^/]+)\/stop\/?$/, action: 'stop' },
  { method: 'POST', path: /^\/servers\/([^/]+)\/restart\/?$/, action: 'restart' },
  { method: 'DELETE', path: /^\/servers\/([^/]+)\/?$/, action: 'delete' },
  { method: 'POST', path: /^\/servers\/([^/]+)\/install-extensions\/?$/, action: 'edit', detail: (req) => withPrefix('extensions: added ', list((req.body as { extensions?: unknown })?.extensions)) },
  { method: 'POST', path: /^\/servers\/([^/]+)\/install-extension\/?$/, action: 'edit', detail: (req) => withPrefix('extensions: added ', field((req.body as { extension?: unknown })?.extension)) },
  {
    method: 'POST', path: /^\/servers\/([^/]+)\/apply-group-settings\/?$/, action: 'edit',
    detail: (req) => withPrefix('extensionGroups, settings: group ', field((req.body as { groupName?: unknown; group_name?: unknown })?.groupName ?? (req.body as { group_name?: unknown })?.group_name)),
  },
  { method: 'POST', path: /^\/servers\/([^/]+)\/clone-workspace\/?$/, action: 'edit', detail: (req) => `workspace: ${sourceDetail(req.body) ?? 'a new source'}` },
  { method: 'POST', path: /^\/servers\/([^/]+)\/restore\/?$/, action: 'snapshot-restore', detail: (req) => `snapshot ${field((req.body as { snapshot_id?: unknown })?.snapshot_id) ?? 'the latest'}` },
  { method: 'POST', path: /^\/servers\/([^/]+)\/snapshot\/?$/, action: 'snapshot' },
  { method: 'POST', path: /^\/servers\/([^/]+)\/access\/?$/, action: 'share', detail: (req) => withPrefix('with ', field((req.body as { person?: unknown })?.person)) },
  { method: 'PUT', path: /^\/servers\/([^/]+)\/access\/?$/, action: 'share', detail: (req) => `shared with: ${list((req.body as { shared_with?: unknown })?.shared_with) || 'no one'}` },
  { method: 'DELETE', path: /^\/servers\/([^/]+)\/access\/([^/]+)\/?$/, action: 'revoke', detail: (req) => withPrefix('from ', field(decode(/\/access\/([^/]+)/.exec(req.path)?.[1] ?? ''))) },
];
/** POST /snapshots/deleted/{name}/restore: the name is a manifest name, not an id. */
const UNDELETE = /^\/snapshots\/deleted\/([^/]+)\/restore\/?$/;

function createDetail(body: unknown): string | undefined {
  if (!body || typeof body !== 'object') return undefined;
  const fields = Object.keys(body).filter((key) => key !== 'name').sort();
  return fields.length > 0 ? `with ${fields.join(', ')}` : undefined;
}

/** A git URL is named without its credentials; an uploaded archive only as such. */
function sourceDetail(body: unknown): string | undefined {
  const url = field((body as { github_url?: unknown } | undefined)?.github_url);
  if (url) {
    try {
      const parsed = new URL(url);
      parsed.username = '';
      parsed.password = '';
      parsed.search = '';
      parsed.hash = '';
      return `git ${parsed.toString()}`;
    } catch {
      return 'git (an unparsable URL)';
    }
  }
  return 'a ZIP archive';
}

const withPrefix = (prefix: string, value: string | undefined): string | undefined => (value ? `${prefix}${value}` : undefined);

export interface ApiRecorderDeps {
  index: ServerIndex;
  /** The signed-in identity of a request, `local` when no one signs in. */
  actorOf(headers: IncomingHttpHeaders): string;
  record(input: AuditInput): void;
  /** Routes added by other parts (sharing …), looked at after the built-in ones; read at each request. */
  extraRoutes?: readonly RouteAction[];
}

/** The door of a request: the dashboard says so in its header; every other client is the API. */
export function doorOf(headers: IncomingHttpHeaders): AuditDoor {
  return String(headers[CLIENT_HEADER] ?? '').trim().toLowerCase() === 'dashboard' ? 'dashboard' : 'api';
}

/** The middleware; mount it before the routes. */
export function apiRecorder(deps: ApiRecorderDeps): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    const found = matchRoute(req.method, req.path, deps.extraRoutes ?? []);
    if (!found) {
      next();
      return;
    }
    const { route, param } = found;
    const byName = route === undefined;
    const name = byName ? param : param !== undefined ? deps.index.nameOfUid(param) : undefined;
    let code: string | undefined;
    let createdId: string | undefined;
    /** The client went away before the answer was written: the route goes on, and its outcome is recorded when it answers. */
    let gone = false;
    let recorded = false;
    const recordOnce = () => {
      if (recorded) return;
      recorded = true;
      const outcome: AuditOutcome = res.statusCode < 400 ? 'ok' : res.statusCode < 500 ? 'refused' : 'failed';
      const serverId = byName ? (createdId ?? null) : (param ?? createdId ?? null);
      const serverName = name ?? (serverId ? deps.index.nameOfUid(serverId) : undefined) ?? null;
      const detail = [
        route?.detail?.(req),
        res.statusCode === 202 ? 'still under way when answered (202)' : undefined,
        gone ? 'the client left before the answer' : undefined,
      ].filter(Boolean).join('; ');
      deps.record({
        actor: deps.actorOf(req.headers),
        door: doorOf(req.headers),
        action: route?.action ?? 'undelete',
        server_id: serverId,
        server_name: serverName,
        outcome,
        ...(outcome !== 'ok' ? { code: code ?? `HTTP_${res.statusCode}` } : {}),
        ...(detail ? { detail } : {}),
      });
    };
    const json = res.json.bind(res);
    res.json = (body: unknown) => {
      const answer = body as { error?: { code?: unknown }; id?: unknown; data?: { id?: unknown } } | undefined;
      if (typeof answer?.error?.code === 'string') code = answer.error.code;
      const id = answer?.id ?? answer?.data?.id;
      if (typeof id === 'string') createdId = id;
      try {
        return json(body);
      } finally {
        if (gone) recordOnce();
      }
    };
    res.once('finish', recordOnce);
    res.once('close', () => {
      if (!res.writableFinished) gone = true;
    });
    next();
  };
}

/** The action a request records, and its path's parameter; `route` undefined for an undelete. */
function matchRoute(method: string, path: string, extra: readonly RouteAction[]): { route: RouteAction | undefined; param: string | undefined } | undefined {
  if (method === 'POST') {
    const undelete = UNDELETE.exec(path);
    if (undelete) return { route: undefined, param: decode(undelete[1]) };
  }
  for (const route of [...ROUTES, ...extra]) {
    if (route.method !== method) continue;
    const match = route.path.exec(path);
    // "create-…" paths also look like /servers/{id}/…: the fixed ones come first in ROUTES.
    if (match) return { route, param: match[1] === undefined ? undefined : decode(match[1]) };
  }
  return undefined;
}

function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

// Which requests are the proxy's, and for which editor: `/vscode/{port}/…` and `/editor/{port}/…`
// parsed into a route, the path the editor sees, its redirects kept under the prefix, and the
// messages a request gets when the editor cannot be reached.
import type { IncomingMessage } from 'node:http';
import type { EditorEndpoint } from '../runtime/interface.ts';

export interface Route {
  /** `/vscode/8012` or `/editor/8012`. */
  prefix: string;
  port: number;
  /** Where the editor answers, once the port is known to be routable. */
  target?: EditorEndpoint;
  /** The path after the prefix, '' when there is none. */
  path: string;
  /** `?…` or ''. */
  search: string;
  /** A port of the editor's programs, reached through the editor's address (forwarded-ports.ts): `target` is that port then. */
  forwarded?: number;
}

const ROUTE = /^\/(vscode|editor)\/(\d{1,5})(\/.*)?$/;

/** Whether a request target is one of the proxy's paths (`/vscode/{port}…`, `/editor/{port}…`), which the API's rules do not cover. */
export function isEditorPath(target: string | undefined): boolean {
  const url = target ?? '/';
  const query = url.indexOf('?');
  return ROUTE.test(query < 0 ? url : url.slice(0, query));
}

export function parseRoute(req: IncomingMessage): Route | undefined {
  // Express rewrites req.url under a mount path; the original is the full path the client asked for.
  const url = (req as { originalUrl?: string }).originalUrl ?? req.url ?? '/';
  const query = url.indexOf('?');
  const pathname = query < 0 ? url : url.slice(0, query);
  const match = ROUTE.exec(pathname);
  if (!match) return undefined;
  return {
    prefix: `/${match[1]}/${match[2]}`,
    port: Number(match[2]),
    path: match[3] ?? '',
    search: query < 0 ? '' : url.slice(query),
  };
}

/** The path the editor sees: the prefix stripped (req.url too, for reports). */
export function editorPath(req: IncomingMessage, route: Route): string {
  req.url = `${route.path || '/'}${route.search}`;
  return req.url;
}

/** Keeps an editor's redirects under the proxy prefix: absolute paths and its own address (or loopback). */
export function rewriteLocation(location: string, route: Route): string {
  if (location.startsWith('/') && !location.startsWith('//')) {
    return location.startsWith(`${route.prefix}/`) ? location : `${route.prefix}${location}`;
  }
  // Relative locations already resolve under the prefix in the browser.
  if (!/^https?:\/\//i.test(location) || !URL.canParse(location)) return location;
  const url = new URL(location);
  const own = url.hostname === route.target?.host || url.hostname === '127.0.0.1' || url.hostname === 'localhost';
  if (!own || url.port !== String(route.target?.port ?? route.port)) return location;
  return `${route.prefix}${url.pathname}${url.search}${url.hash}`;
}

/** Why the editor did not answer, for EDITOR_UNAVAILABLE's message: the network error's code, else its message. */
export const unavailableCause = (err: Error): string => (err as NodeJS.ErrnoException).code ?? err.message;

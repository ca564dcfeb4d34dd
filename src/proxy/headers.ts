// What headers cross the proxy: an editor runs the user's code, so the service's and the front
// door's credentials (cookies and authorization headers) never reach it, nor do hop-by-hop
// headers, which describe one connection; it is told where the request came from instead.
import type { IncomingMessage } from 'node:http';

/** Cookies whose name starts with this belong to the service and never reach an editor. */
export const SERVICE_COOKIE_PREFIX = 'devbox';

/**
 * Cookies of the service and of the Databricks Apps front door (`__Host-databricksapps`, its
 * session, and `__Host-databricksapps_csrf`), in any case and with or without a `__Host-` or
 * `__Secure-` prefix: an editor runs the user's code, which must not get them.
 */
const CREDENTIAL_COOKIE = new RegExp(`^(__host-|__secure-)?(${SERVICE_COOKIE_PREFIX}|databricksapps)`, 'i');
/** Whether a Cookie header may hold any such cookie: most do not, and are passed on without splitting. */
const CREDENTIAL_COOKIE_ANYWHERE = new RegExp(`${SERVICE_COOKIE_PREFIX}|databricksapps`, 'i');

/** Credentials meant for the service or a proxy in front of it. */
const CREDENTIAL_HEADERS = ['authorization', 'proxy-authorization', 'x-forwarded-access-token'];

/**
 * Request headers never passed to an editor: credentials, and hop-by-hop ones (the connection to
 * the editor is the pool's own; the service already answered `Expect: 100-continue`). An upgrade
 * keeps Connection and Upgrade, which are what it asks for.
 */
const DROPPED_REQUEST_HEADERS = new Set([...CREDENTIAL_HEADERS, 'connection', 'keep-alive', 'proxy-connection', 'upgrade', 'expect']);
export const DROPPED_UPGRADE_HEADERS = new Set([...CREDENTIAL_HEADERS, 'keep-alive', 'proxy-connection', 'expect']);
/**
 * An upgrade whose frames the proxy reads also loses the browser's compression offer: the editor
 * then sends and gets plain frames, whose message headers are read without inflating anything
 * (docs/idle.md has what this costs: the hop to the editor is loopback or the cluster's network).
 */
export const DROPPED_READ_UPGRADE_HEADERS = new Set([...DROPPED_UPGRADE_HEADERS, 'sec-websocket-extensions']);
/** Response headers that describe the editor's connection, not the client's: Node frames the response to the client itself. */
export const HOP_BY_HOP_RESPONSE = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'trailer', 'upgrade']);
/** undici frames the request itself (chunked when the body has no length) and refuses these. */
export const DROPPED_FOR_UNDICI = new Set([...DROPPED_REQUEST_HEADERS, 'transfer-encoding']);

/**
 * The request's headers for the editor under `prefix` as a flat list: without `dropped` and the
 * service's cookies, with where the request came from (X-Forwarded-For, -Proto, -Host, -Prefix).
 */
export function editorRequestHeaders(req: IncomingMessage, prefix: string, dropped: Set<string>): string[] {
  const headers = req.headers;
  const out: string[] = [];
  let forwardedProto = false;
  let forwardedHost = false;
  let forwardedFor: string | undefined;
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || dropped.has(name)) continue;
    switch (name) {
      case 'cookie': {
        const kept = keptCookies(value as string);
        if (kept !== '') out.push(name, kept);
        continue;
      }
      case 'x-forwarded-for':
        forwardedFor = value as string;
        continue;
      case 'x-forwarded-prefix':
        continue;
      case 'x-forwarded-proto':
        forwardedProto = true;
        break;
      case 'x-forwarded-host':
        forwardedHost = true;
        break;
    }
    if (typeof value === 'string') out.push(name, value);
    else for (const one of value) out.push(name, one);
  }
  // A front proxy (Databricks Apps) sets these first; keep its values, they describe the browser.
  if (!forwardedProto) out.push('x-forwarded-proto', (req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http');
  // An HTTP/1.0 request may come without Host: then there is no original host to tell.
  if (!forwardedHost && headers.host !== undefined) out.push('x-forwarded-host', headers.host);
  out.push('x-forwarded-prefix', prefix);
  const client = req.socket.remoteAddress;
  if (client) out.push('x-forwarded-for', forwardedFor ? `${forwardedFor}, ${client}` : client);
  else if (forwardedFor) out.push('x-forwarded-for', forwardedFor);
  return out;
}

/** The editor's cookies only: the service's and the front door's never reach it. */
function keptCookies(cookie: string): string {
  if (!CREDENTIAL_COOKIE_ANYWHERE.test(cookie)) return cookie;
  return cookie
    .split(';')
    .filter((one) => !CREDENTIAL_COOKIE.test(one.trim()))
    .join(';')
    .trim();
}

/** A status line and raw headers, as written on an upgraded (or refused) connection. */
export function rawHead(statusLine: string, raw: string[]): string {
  let head = `${statusLine}\r\n`;
  for (let i = 0; i < raw.length; i += 2) head += `${raw[i]}: ${raw[i + 1]}\r\n`;
  return `${head}\r\n`;
}

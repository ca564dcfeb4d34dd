// The API's cross-origin policy (REST, the watch stream and /ws/logs; never an editor's pages).
// By default every response allows all origins, errors included, and no request is refused for
// its Origin, as the service's interface says: a team's portal or notebook on another origin
// calls the API like a script does. An operator may lock the API to a list of origins with
// `api.allowedOrigins` in the config file (read at every request, so an edit applies at once);
// the service's own pages are always allowed. What protects the editors does not depend on this:
// the Host allowlist, the proxy's own-origin rule and the stripping of credentials.
import type { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';
import { apiError } from '../core/error-catalogue.ts';
import type { HttpError } from '../core/errors.ts';
import { printable } from './allowed-hosts.ts';

const METHODS = 'GET, POST, PUT, DELETE, OPTIONS';
const HEADERS = 'Content-Type, Authorization';

/** The CORS headers of every API response with the default policy, as name, value, name, value… (writeHead's raw form). */
export const CORS_HEADERS: readonly string[] = [
  'Access-Control-Allow-Origin', '*',
  'Access-Control-Allow-Methods', METHODS,
  'Access-Control-Allow-Headers', HEADERS,
  'Access-Control-Max-Age', '600',
];

/** With a locked policy, a response to a request without an allowed Origin names none. */
const VARY_ONLY: readonly string[] = ['Vary', 'Origin'];

export interface ApiCorsOptions {
  /** `api.allowedOrigins` of the config in use: `*` anywhere in it allows every origin. */
  allowedOrigins: () => readonly string[];
}

/** Decides the CORS headers of an API response, and whether a locked policy refuses the request. */
export class ApiCors {
  readonly #allowedOrigins: () => readonly string[];

  constructor(options: ApiCorsOptions) {
    this.#allowedOrigins = options.allowedOrigins;
  }

  /** The headers for this request's response (raw pairs); the shared constant when every origin is allowed. */
  headersFor(req: IncomingMessage): readonly string[] {
    const allowed = this.#allowedOrigins();
    if (allowed.includes('*')) return CORS_HEADERS;
    const origin = req.headers.origin;
    if (origin === undefined || !this.#allows(origin, allowed, req)) return VARY_ONLY;
    return [
      'Access-Control-Allow-Origin', origin,
      'Vary', 'Origin',
      'Access-Control-Allow-Methods', METHODS,
      'Access-Control-Allow-Headers', HEADERS,
      'Access-Control-Max-Age', '600',
    ];
  }

  /** 403 for a request (preflights and WebSockets included) whose Origin the locked policy does not allow. */
  refusal(req: IncomingMessage, isUpgrade: boolean): HttpError | undefined {
    const origin = req.headers.origin;
    if (origin === undefined) return undefined;
    const allowed = this.#allowedOrigins();
    if (allowed.includes('*') || this.#allows(origin, allowed, req)) return undefined;
    return apiError('ORIGIN_NOT_ALLOWED',
      `${isUpgrade ? 'WebSockets' : 'requests'} from pages of "${printable(origin)}" are not accepted by this service's API: ` +
      'add that origin to api.allowedOrigins in the config file (["*"] allows every origin)');
  }

  /** Express middleware: the headers on every response, a preflight answered 204 (or refused 403 when locked). */
  middleware(): RequestHandler {
    return (req, res, next) => {
      const headers = this.headersFor(req);
      for (let i = 0; i < headers.length; i += 2) res.setHeader(headers[i], headers[i + 1]);
      if (req.method !== 'OPTIONS') return next();
      const refused = this.refusal(req, false);
      if (refused) return next(refused);
      res.status(204).end();
    };
  }

  #allows(origin: string, allowed: readonly string[], req: IncomingMessage): boolean {
    const normalized = origin.toLowerCase().replace(/\/$/, '');
    return allowed.some((entry) => entry.toLowerCase().replace(/\/$/, '') === normalized) || isOwnOrigin(normalized, req);
  }
}

/** The service's own pages (the dashboard): an Origin whose host is the one the request was sent to. */
function isOwnOrigin(origin: string, req: IncomingMessage): boolean {
  if (!URL.canParse(origin)) return false;
  const url = new URL(origin);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
  const forwarded = req.headers['x-forwarded-host'];
  const hosts = [req.headers.host, ...(typeof forwarded === 'string' ? forwarded.split(',') : [])];
  return hosts.some((host) => host !== undefined && host.trim().toLowerCase() === url.host);
}

// Without the platform's sign-in, only the user's own browser may reach the editors. A page on
// another site can still point its own name at 127.0.0.1 (DNS rebinding) and then send requests
// that carry that name in Host; refusing every Host that is not a name of this service stops it,
// as webpack-dev-server's and Vite's allowedHosts do, for the API and the editors alike. A page
// of another site can also address 127.0.0.1 by its right name: browsers then send its Origin,
// which must be of an allowed host for the editor proxy (editors have terminals; WebSockets open
// to any site). The API's own cross-origin policy is src/api/cors.ts.
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { apiError } from '../core/error-catalogue.ts';
import type { HttpError } from '../core/errors.ts';

export interface AllowedHostsOptions {
  /** The address the service is bound to (DEVBOX_HOST). */
  boundHost: string;
  /** DEVBOX_ALLOWED_HOSTS: names, or `.example.com` for that domain and all below it. */
  extra?: string[];
}

/** Decides which Host and Origin names may reach the service. */
export class AllowedHosts {
  readonly #exact = new Set(['localhost', '127.0.0.1', '[::1]']);
  readonly #domains: string[] = ['.localhost'];
  /** Bound to every address: any IP literal is one of this machine's, and cannot be rebound. */
  readonly #anyAddress: boolean;

  constructor(options: AllowedHostsOptions) {
    const bound = normalizeHostname(options.boundHost.includes(':') && !options.boundHost.startsWith('[') ? `[${options.boundHost}]` : options.boundHost);
    this.#anyAddress = bound === '0.0.0.0' || bound === '[::]';
    if (bound !== undefined && !this.#anyAddress) this.#exact.add(bound);
    for (const entry of options.extra ?? []) {
      if (entry.startsWith('.')) this.#domains.push(entry.toLowerCase());
      else {
        const name = normalizeHostname(isIP(entry) === 6 ? `[${entry}]` : entry);
        if (name !== undefined) this.#exact.add(name);
      }
    }
  }

  /** True for a hostname (as in a Host header, without the port) this service answers to. */
  allowsHostname(hostname: string): boolean {
    if (this.#exact.has(hostname)) return true;
    if (this.#domains.some((domain) => hostname.endsWith(domain) || hostname === domain.slice(1))) return true;
    return this.#anyAddress && (isIP(hostname) === 4 || (hostname.startsWith('[') && isIP(hostname.slice(1, -1)) === 6));
  }

  /**
   * Why this request may not reach the service (403) for its Host, or undefined when it may. A
   * request without Host (HTTP/1.0) did not come from a browser, which always sends one.
   */
  hostRefusal(req: IncomingMessage): HttpError | undefined {
    const host = req.headers.host;
    if (host !== undefined && !this.#allowsHost(host)) {
      return apiError('HOST_NOT_ALLOWED', { host: printable(host), port: req.socket.localPort });
    }
    return undefined;
  }

  /** Why this request may not reach an editor (403) for the page it came from, or undefined when it may. */
  originRefusal(req: IncomingMessage, isUpgrade: boolean): HttpError | undefined {
    const origin = req.headers.origin;
    // A preflight only asks; the request it announces is checked when it comes.
    if (origin !== undefined && req.method !== 'OPTIONS' && !this.#allowsOrigin(origin)) {
      return apiError('ORIGIN_NOT_ALLOWED',
        `${isUpgrade ? 'WebSockets are' : 'requests are'} not accepted from pages of "${printable(origin)}": ` +
        'open the page from this service, or add its host to DEVBOX_ALLOWED_HOSTS');
    }
    return undefined;
  }

  #allowsHost(host: string): boolean {
    const match = /^(\[[^\]]*\]|[^:]*)(?::\d*)?$/.exec(host.trim());
    const hostname = match ? normalizeHostname(match[1]) : undefined;
    return hostname !== undefined && this.allowsHostname(hostname);
  }

  #allowsOrigin(origin: string): boolean {
    if (!URL.canParse(origin)) return false; // "null" too: a sandboxed or file:// page
    const url = new URL(origin);
    return (url.protocol === 'http:' || url.protocol === 'https:') && this.allowsHostname(url.hostname.replace(/\.$/, ''));
  }
}

/**
 * HTTP/1.1 requires a Host header. Node's own check answers 400 without a body, so the service
 * turns it off (requireHostHeader: false) and refuses here, in the error envelope.
 */
export function missingHost(req: IncomingMessage): HttpError | undefined {
  if (req.httpVersion !== '1.1' || req.headers.host !== undefined) return undefined;
  return apiError('BAD_REQUEST', `an HTTP/1.1 request needs a Host header: send Host: localhost:${req.socket.localPort}`);
}

/** Lower case, without one trailing dot; undefined for an empty name. */
function normalizeHostname(name: string): string | undefined {
  const hostname = name.toLowerCase().replace(/\.$/, '');
  return hostname === '' ? undefined : hostname;
}

/** A header value fit for a message: visible ASCII only, bounded. */
export function printable(value: string): string {
  const safe = value.replace(/[^\x20-\x7e]/g, '?');
  return safe.length > 100 ? `${safe.slice(0, 100)}…` : safe;
}

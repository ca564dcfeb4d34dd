// The ports an editor's programs listen on (a web app, a dev server), reached under the editor's
// own address at the paths code-server's port proxy uses, so the links of VS Code's Ports view
// work through this proxy too: `/vscode/{editor}/proxy/{port}/…` (the prefix up to the port
// stripped) and `/vscode/{editor}/absproxy/{port}/…` (the path passed whole, for an app told its
// base path), and the same under `/editor/`. The editor route's own checks come first (whether
// the requester may reach that editor, in editor-proxy.ts); then the port must be one the
// server's own programs listen on (the runtime's listenerOf), and never the editor's or the service's.
import type { LookupFunction } from 'node:net';
import { apiError } from '../core/error-catalogue.ts';
import type { HttpError } from '../core/errors.ts';
import type { PortListener } from '../runtime/listeners.ts';
import { EDITOR_HOST } from '../runtime/port-probe.ts';
import type { Route } from './route.ts';

export type { PortListener };

/**
 * Every path code-server's own router would take for its port proxy, in any case (express matches
 * without it), whatever follows: a port that is not plain digits is refused here, not left to
 * code-server, whose parseInt would read `8013x` as 8013. (The editors also run with
 * --disable-proxy: this proxy is the only one.)
 */
const FORWARDED = /^\/(proxy|absproxy)(?:\/([^/]*)(\/.*)?)?$/i;

export interface ForwardedPortsOptions {
  /** Who listens on `port` for the server whose editor has the route number `editorPort`. */
  listenerOf: (editorPort: number, port: number) => Promise<PortListener>;
  /** The service's own port, where the editors share its machine's loopback: never forwarded. */
  servicePort?: () => number;
}

/** Whether the path under an editor's prefix is a forwarded port's (`/proxy/{port}…`, `/absproxy/{port}…`). */
export const isForwardedPath = (route: Route): boolean => FORWARDED.test(route.path);

/** The address a forwarded port answers at, as GET /servers/{id}/ports lists it. */
export const forwardedUrl = (editorPort: number, port: number): string => `/vscode/${editorPort}/proxy/${port}/`;

const ANOTHER_PROGRAM = 'it belongs to another program of this machine, not to one of this server\'s (the editors of one machine share its loopback, '
  + 'and only ports the server\'s own programs listen on are forwarded): use another port';

/**
 * The host a forwarded port of an editor on 127.0.0.1 is reached at: both loopbacks, IPv4 first,
 * through LOOPBACK_LOOKUP (a dev server told `localhost` often listens on ::1 alone).
 */
export const LOOPBACKS = 'loopbacks.invalid';

/** Resolves LOOPBACKS to 127.0.0.1 and ::1, which a connection tries in turn (Node's autoSelectFamily). */
export const LOOPBACK_LOOKUP: LookupFunction = (_host, options, callback) => {
  if (options.all) (callback as (err: null, addresses: { address: string; family: number }[]) => void)(null, [{ address: '127.0.0.1', family: 4 }, { address: '::1', family: 6 }]);
  else callback(null, '127.0.0.1', 4);
};

/** Decides whether a forwarded port's path is let through, and to where. */
export class ForwardedPorts {
  readonly #listenerOf: ForwardedPortsOptions['listenerOf'];
  readonly #servicePort: ForwardedPortsOptions['servicePort'];

  constructor(options: ForwardedPortsOptions) {
    this.#listenerOf = options.listenerOf;
    this.#servicePort = options.servicePort;
  }

  /**
   * The route to the port the path names, on the editor's host; or why not: 403 for a port that
   * is not the server's to forward, 502 when nothing listens on it. `route` is an editor's route
   * whose target is known (the requester may reach it).
   */
  async resolve(route: Route): Promise<Route | HttpError> {
    const [, kind, segment = '', rest] = FORWARDED.exec(route.path)!;
    const port = /^\d{1,5}$/.test(segment) ? Number(segment) : Number.NaN;
    const editor = route.target!;
    if (!(port >= 1 && port <= 65535)) return apiError('PORT_NOT_FORWARDED', { port: JSON.stringify(segment), why: 'it is not a port number (1 to 65535)' });
    const why = port === route.port || port === editor.port ? 'it is the editor\'s own port, open the editor itself'
      : port === this.#servicePort?.() ? 'it is this service\'s own port' : undefined;
    if (why) return apiError('PORT_NOT_FORWARDED', { port, why });
    let listener: PortListener;
    try {
      listener = await this.#listenerOf(route.port, port);
    } catch (err) {
      return apiError('PORT_UNAVAILABLE', { port, cause: `who listens on it could not be read: ${(err as Error).message}` });
    }
    if (listener === 'none') return apiError('PORT_NOT_LISTENING', { port });
    if (listener === 'other') return apiError('PORT_NOT_FORWARDED', { port, why: ANOTHER_PROGRAM });
    const whole = kind.toLowerCase() === 'absproxy';
    return {
      // Nothing is stripped for absproxy: its redirects and links are the app's own, whole.
      prefix: whole ? '' : `${route.prefix}/proxy/${port}`,
      // The editor's route number: the traffic counts as the server's (idle tracking, metrics).
      port: route.port,
      forwarded: port,
      // Every loopback socket on the port is the server's (listenerOf), so either may answer.
      target: { host: editor.host === EDITOR_HOST ? LOOPBACKS : editor.host, port },
      path: whole ? `${route.prefix}${route.path}` : rest ?? '',
      search: route.search,
    };
  }
}

/** The 502 for a target that did not answer: the editor's, or the forwarded port's. */
export function unavailable(route: Route, cause: string): HttpError {
  return route.forwarded !== undefined
    ? apiError('PORT_UNAVAILABLE', { port: route.forwarded, cause })
    : apiError('EDITOR_UNAVAILABLE', { port: route.port, cause });
}

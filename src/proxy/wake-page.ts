// Wake on open: a request for the editor of a server stopped for idleness starts it again. A
// browser navigation gets a small page that says so and reloads into the editor once it
// answers; any other request a 503 in the error envelope with Retry-After.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { apiError } from '../core/error-catalogue.ts';
import { errorBody } from '../core/errors.ts';
import type { WakeState } from '../manifests/types.ts';

/** The header the starting page sends when it polls, and every wake answer carries (`starting`, `refused`, `failed`). */
export const WAKE_HEADER = 'x-devbox-wake';
/** Seconds a client is told to wait before asking again. */
const RETRY_AFTER_SECONDS = 2;

export interface WakeOnOpenOptions {
  /** The server on the port when the requester may see it (the proxy's own access rule): its name and display name. */
  serverOn: (port: number, req: IncomingMessage) => { name: string; displayName: string } | undefined;
  wakeState: (name: string) => WakeState | undefined;
  /** Lifts the server's idle stop so the controller starts it; false when it holds none. `req` is the request that opened it. */
  wake: (name: string, why: string, req: IncomingMessage) => boolean;
}

/** The proxy's `unroutable` hook: answers for a server stopped for idleness or on its way back; false (the 404) for any other. */
export function wakeOnOpen(options: WakeOnOpenOptions): (port: number, req: IncomingMessage, res: ServerResponse) => boolean {
  return (port, req, res) => {
    const server = options.serverOn(port, req);
    if (!server) return false;
    let state = options.wakeState(server.name);
    if (!state) return false;
    // Another site's page may not start editors by embedding their URL (an image, a script): only
    // this service's pages, an address typed or a link followed (a navigation) open one.
    if (crossSiteSubresource(req)) return false;
    options.wake(server.name, `${req.method} /vscode/${port}/ was opened`, req);
    state = options.wakeState(server.name) ?? state;
    answer(req, res, server.displayName, state);
    return true;
  };
}

function crossSiteSubresource(req: IncomingMessage): boolean {
  const site = req.headers['sec-fetch-site'];
  return (site === 'cross-site' || site === 'same-site') && req.headers['sec-fetch-mode'] !== 'navigate';
}

function answer(req: IncomingMessage, res: ServerResponse, displayName: string, state: WakeState): void {
  const headers = { [WAKE_HEADER]: state.state, 'Cache-Control': 'no-store', 'Retry-After': String(RETRY_AFTER_SECONDS) };
  const navigation = req.method === 'GET' && req.headers[WAKE_HEADER] === undefined && (req.headers.accept ?? '').includes('text/html');
  if (navigation) {
    const body = startingPage(displayName, state);
    res.writeHead(503, { ...headers, 'Content-Type': 'text/html; charset=utf-8', 'Content-Length': Buffer.byteLength(body) }).end(body);
    return;
  }
  const error = state.state === 'starting'
    ? apiError('EDITOR_STARTING', { server: displayName, seconds: RETRY_AFTER_SECONDS })
    : state.state === 'refused'
      ? apiError(state.quota ? 'QUOTA_EXCEEDED' : 'CAPACITY_EXCEEDED', `server "${displayName}" cannot start now: ${state.message}`)
      : apiError('EDITOR_FAILED', `server "${displayName}" failed to start: ${state.message}`);
  const body = errorBody(error.code, error.message);
  res.writeHead(error.status, { ...headers, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) }).end(body);
}

const escapeHtml = (text: string): string =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/**
 * The page: self-contained (no asset, no request but its polls). It polls its own address with
 * the wake header: `starting` means keep waiting, a refusal or failure is shown, the proxy's own
 * 502 (the editor does not answer yet) means wait, and anything else is the editor: reload into it.
 */
export function startingPage(displayName: string, state: WakeState): string {
  const name = escapeHtml(displayName);
  const [title, detail] = state.state === 'starting'
    ? [`Starting ${name}…`, 'It was stopped after a while without use. This page opens the editor as soon as it answers.']
    : [state.state === 'refused' ? `${name} cannot start now` : `${name} failed to start`, escapeHtml(state.message)];
  // JSON inside a script: "<" escaped so no text can end the script element.
  const script = (value: unknown) => JSON.stringify(value).replace(/</g, '\\u003c');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<style>
body { margin: 0; min-height: 100vh; display: grid; place-items: center; font: 16px/1.5 system-ui, sans-serif; color: #1f2328; background: #f6f8fa; }
main { max-width: 34rem; padding: 2rem; text-align: center; }
p { color: #57606a; }
</style>
</head>
<body>
<main>
<h1 id="title">${title}</h1>
<p id="detail" role="status">${detail}</p>
</main>
<script>
(() => {
  const name = ${script(displayName)};
  const give = (heading, text) => {
    document.title = heading;
    document.getElementById('title').textContent = heading;
    document.getElementById('detail').textContent = text;
  };
  const until = Date.now() + 180000;
  const later = () => {
    if (Date.now() < until) return setTimeout(poll, 1000);
    give(name + ' is taking long to start', 'Reload this page to keep waiting, or read its log in the dashboard.');
  };
  const poll = async () => {
    let res;
    try {
      res = await fetch(location.href, { headers: { ${script(WAKE_HEADER)}: 'poll' }, cache: 'no-store', credentials: 'same-origin' });
    } catch {
      return later();
    }
    const wake = res.headers.get(${script(WAKE_HEADER)});
    if (wake === 'starting') return later();
    const error = (res.headers.get('content-type') || '').includes('application/json') ? await res.json().then((b) => b && b.error, () => undefined) : undefined;
    if (wake === 'refused') return give(name + ' cannot start now', error ? error.message : 'HTTP ' + res.status);
    if (wake === 'failed') return give(name + ' failed to start', error ? error.message : 'HTTP ' + res.status);
    if (error && error.code === 'EDITOR_UNAVAILABLE') return later();
    if (error && error.code === 'EDITOR_NOT_FOUND') return give(name + ' is not running', error.message);
    location.reload();
  };
  if (${script(state.state === 'starting')}) later();
})();
</script>
</body>
</html>
`;
}

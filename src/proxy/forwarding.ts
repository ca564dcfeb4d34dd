// One proxied HTTP request as undici's dispatch handler: the editor's answer streamed to the
// client as it comes, with backpressure, and its failures under the error codes Node's own client
// uses, which the proxy's log and 502 expect. Types only from undici: the pool that drives this
// handler is loaded on first use (see loadPool in editor-proxy.ts).
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import { HOP_BY_HOP_RESPONSE } from './headers.ts';
import { rewriteLocation, type Route } from './route.ts';

/** One proxied request as undici's handler: the editor's answer written to the client as it comes. */
export class Forwarding implements Dispatcher.DispatchHandler {
  controller: Dispatcher.DispatchController | undefined;
  /** The editor's side is over: answered in full, or failed. */
  done = false;

  readonly res: ServerResponse;
  readonly route: Route;
  readonly timeoutMs: number;
  readonly fail: (err: Error) => void;

  constructor(res: ServerResponse, route: Route, timeoutMs: number, fail: (err: Error) => void) {
    this.res = res;
    this.route = route;
    this.timeoutMs = timeoutMs;
    this.fail = fail;
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
  }

  onResponseStart(controller: Dispatcher.DispatchController, status: number, headers: IncomingHttpHeaders, message?: string): void {
    if (status < 200) return; // 1xx: informational, Node answers the client's own
    const out: string[] = [];
    for (const name in headers) {
      const value = headers[name];
      if (value === undefined || HOP_BY_HOP_RESPONSE.has(name)) continue;
      if (typeof value !== 'string') for (const one of value) out.push(name, one);
      else out.push(name, name === 'location' ? rewriteLocation(value, this.route) : value);
    }
    try {
      this.res.writeHead(status, message, out);
    } catch (err) {
      // Node refuses what the editor's parser let through (a byte above 0x7e in the status text,
      // say): the editor's side is given up and the client told why. writeHead kept the refused
      // status text, which the 502 would repeat: back to the default.
      this.res.statusMessage = '';
      controller.abort(new Error(`its answer's status line or headers cannot be passed on: ${(err as Error).message}`));
    }
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    // Backpressure: the client's 'drain' resumes it.
    if (!this.res.write(chunk)) controller.pause();
  }

  onResponseEnd(): void {
    this.done = true;
    this.res.end();
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    this.done = true;
    // The client left first (its close aborted this request): nothing to answer, nothing to report.
    if (this.res.destroyed && !this.res.writableFinished) return;
    this.fail(asNetworkError(err, this.timeoutMs));
  }
}

/** undici's timeouts and closed sockets under the codes Node's client uses (and the log expects). */
function asNetworkError(err: Error, timeoutMs: number): Error {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
    return Object.assign(new Error(`no answer within ${timeoutMs} ms`), { code: 'ETIMEDOUT', cause: err });
  }
  if (code === 'UND_ERR_SOCKET') return Object.assign(new Error(err.message), { code: 'ECONNRESET', cause: err });
  return err;
}

// One error type for everything a request can get wrong, and the one JSON envelope every refusal
// uses (API, proxy, WebSocket), shared by every area that answers HTTP. The codes, their statuses
// and messages are in error-catalogue.ts: raise one with `apiError(code, …)`.
import type { ServerResponse } from 'node:http';
import * as http from './http.ts';
import type { Duplex } from 'node:stream';

/** An error with an HTTP status and a stable code; its message says what to change. */
export class HttpError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details?: unknown;

  constructor(status: number, code: string, message: string, details?: unknown) {
    super(message);
    this.name = 'HttpError';
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

/** The JSON body of an error answered outside express, the same envelope as express's: `{"status":"error","error":{…}}`. */
export function errorBody(code: string, message: string): string {
  return JSON.stringify({ status: 'error', error: { code, message } });
}

/**
 * Answers a request with an error in the envelope, outside express (before it, or in the proxy);
 * `headers` (raw name, value pairs) go with it, such as the API's CORS headers.
 */
export function writeError(res: ServerResponse, error: HttpError, headers: readonly string[] = []): void {
  const status = error.status;
  const body = errorBody(error.code, error.message);
  res.writeHead(status, [...headers, 'Content-Type', 'application/json', 'Content-Length', String(Buffer.byteLength(body))]).end(body);
}

/**
 * Answers a request on its raw socket (an upgrade or CONNECT request, before any upgrade) with an
 * HTTP error in the envelope, then closes the socket.
 */
export function writeRawError(socket: Duplex, error: HttpError, headers: readonly string[] = []): void {
  const status = error.status;
  const body = errorBody(error.code, error.message);
  let extra = '';
  for (let i = 0; i < headers.length; i += 2) extra += `${headers[i]}: ${headers[i + 1]}\r\n`;
  socket.on('error', () => socket.destroy()); // the client may already be gone
  socket.once('finish', () => socket.destroy());
  socket.end(
    `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nConnection: close\r\n` + extra +
      'Content-Type: application/json\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}

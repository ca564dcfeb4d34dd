// One error type for everything a request can get wrong, and the one JSON envelope every refusal
// uses (API, proxy, WebSocket), shared by every area that answers HTTP.
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

export const notFound = (id: string): HttpError =>
  new HttpError(404, 'SERVER_NOT_FOUND', `no server has the id "${id}": list the servers with GET /servers`);

/** The JSON body of an error answered outside express, the same envelope as express's: `{"status":"error","error":{…}}`. */
export function errorBody(code: string, message: string): string {
  return JSON.stringify({ status: 'error', error: { code, message } });
}

/**
 * Answers a request with an error in the envelope, outside express (before it, or in the proxy);
 * `headers` (raw name, value pairs) go with it, such as the API's CORS headers.
 */
export function writeError(res: ServerResponse, status: number, code: string, message: string, headers: readonly string[] = []): void {
  const body = errorBody(code, message);
  res.writeHead(status, [...headers, 'Content-Type', 'application/json', 'Content-Length', String(Buffer.byteLength(body))]).end(body);
}

/**
 * Answers a request on its raw socket (an upgrade or CONNECT request, before any upgrade) with an
 * HTTP error in the envelope, then closes the socket.
 */
export function writeRawError(socket: Duplex, status: number, code: string, message: string, headers: readonly string[] = []): void {
  const body = errorBody(code, message);
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

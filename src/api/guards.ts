// The last line of defence of the HTTP server: no request, however malformed, ends the process.
// Handlers are meant to answer every request themselves; these only catch what slips through.
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as http from '../core/http.ts';
import type { Duplex } from 'node:stream';
import { apiError } from '../core/error-catalogue.ts';
import { writeError, writeRawError, type HttpError } from '../core/errors.ts';

/** The headers an answer to `req` carries whoever writes it (the API's CORS headers). */
type HeadersFor = (req: IncomingMessage) => readonly string[];

/** Wraps a request listener: a throw is logged with its stack and answered 500, and the service goes on. */
export function guardRequests(
  log: (message: string) => void,
  handle: (req: IncomingMessage, res: ServerResponse) => void,
  headersFor: HeadersFor = () => [],
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    try {
      handle(req, res);
    } catch (error) {
      log(`${req.method} ${req.url} failed: ${(error as Error)?.stack ?? error}`);
      if (res.headersSent) {
        res.destroy();
        return;
      }
      res.shouldKeepAlive = false;
      writeError(res, apiError('INTERNAL'), headersFor(req));
    }
  };
}

/** Wraps an upgrade listener the same way; a socket already answered or upgraded is only closed. */
export function guardUpgrades(
  log: (message: string) => void,
  handle: (req: IncomingMessage, socket: Duplex, head: Buffer) => void,
  headersFor: HeadersFor = () => [],
): (req: IncomingMessage, socket: Duplex, head: Buffer) => void {
  return (req, socket, head) => {
    try {
      handle(req, socket, head);
    } catch (error) {
      log(`upgrade ${req.method} ${req.url} failed: ${(error as Error)?.stack ?? error}`);
      if (!socket.writable || ((socket as { bytesWritten?: number }).bytesWritten ?? 0) > 0) socket.destroy();
      else writeRawError(socket, apiError('INTERNAL'), headersFor(req));
    }
  };
}

/**
 * The server's 'clientError' listener: a request Node's parser refuses (a bad request line, a
 * header without a colon, an unknown HTTP version, headers over 16 KiB) gets a 4xx in the error
 * envelope when the socket can still take one, as Node's own default would without the body.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  const inProgress = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (error.code === 'ECONNRESET' || !socket.writable || inProgress?.headersSent) {
    socket.destroy();
    return;
  }
  writeRawError(socket, describeClientError(error));
}

/** Node's parser error as the client is told it. */
function describeClientError(error: NodeJS.ErrnoException): HttpError {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return apiError('HEADERS_TOO_LARGE', { limit: http.maxHeaderSize });
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return apiError('BODY_TOO_LARGE', 'the chunk extensions of the request body are too large: send the body without them');
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return apiError('REQUEST_TIMEOUT');
    default:
      return apiError('BAD_REQUEST', `the request is not valid HTTP/1.1 (${error.code ?? error.message}): send a well-formed request line and headers`);
  }
}

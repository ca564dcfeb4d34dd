// One error type for everything a request can get wrong, turned into JSON by one handler.

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

// Every error code the service answers with, defined once: its code (the wire string clients match
// on, which never changes), its HTTP status and its message, in the manner of fastify's
// `createError(code, message, statusCode)`. A site raises one by code and gets the HttpError the
// envelope is written from:
//
//   throw apiError('NO_FREE_PORT', { min, max });        // a template: its arguments are typed
//   throw apiError('INVALID_BODY', 'give either …');      // fixed text: the site may say more
//   writeError(res, apiError('EDITOR_NOT_FOUND', { port }));
//
// A message is either a template (a function of what the site knows) when the code is raised in
// one situation, or fixed text (its default) when the code covers several: a site then passes the
// text that says what to change, as INVALID_BODY's sixteen sites do. test/core/error-catalogue.test.ts
// keeps every literal code in src/ here, and the OpenAPI document's codes consistent with it.
import { HttpError } from './errors.ts';

type Template<A> = (args: A) => string;

interface Definition {
  /** The HTTP status it is answered with. */
  readonly status: number;
  /** Fixed text (the default, which a site may replace with its own), or a template the site fills. */
  readonly message: string | Template<never>;
  /**
   * Other statuses a site may answer the code with, instead of `status`, and why: `client error`
   * for any 4xx. Only two codes have them, because they carry a status someone else chose.
   */
  readonly alsoStatus?: readonly number[] | 'client error';
}

/** A count a log route takes from the query (`?lines=`, `?tail=`), out of range or not a number. */
interface CountProblem { value: unknown; min: number; max: number; defaultValue: number }
const countMessage = (name: string): Template<CountProblem> => ({ value, min, max, defaultValue }) =>
  `"${name}" must be a whole number from ${min} to ${max}, not ${JSON.stringify(value)}: ` +
  `change ?${name}= or leave it out for the default of ${defaultValue}`;

export const ERRORS = {
  // --- 400 Bad Request ---
  /**
   * 400 for a handshake ws refuses (a bad key or version), 405 for one that is not a GET: the
   * status tells a client which part of its request to change.
   */
  BAD_HANDSHAKE: {
    status: 400, alsoStatus: [405],
    message: ({ problem }: { problem: string }) =>
      `${problem}: open the log stream with a WebSocket client (GET, Upgrade: websocket, Sec-WebSocket-Version: 13)`,
  },
  /**
   * A request HTTP itself refuses. Express's own 4xx errors (body-parser's 415 for an unknown
   * charset, 400 for an aborted body…) pass with their status, so the client sees the status
   * express chose with this code, as it always has.
   */
  BAD_REQUEST: { status: 400, alsoStatus: 'client error', message: 'the request is not valid HTTP: send a well-formed request' },
  BODY_TOO_COMPLEX: { status: 400, message: 'the request body is nested too deeply or holds too many keys: send a simpler body' },
  INVALID_ARCHIVE: { status: 400, message: ({ problem }: { problem: string }) => `zip_file: ${problem}` },
  INVALID_BODY: { status: 400, message: 'the request body is not valid' },
  INVALID_GIT_URL: { status: 400, message: ({ problem }: { problem: string }) => `github_url: ${problem}` },
  INVALID_IDENTITY: {
    status: 400,
    message: ({ problem }: { problem: string }) =>
      `${problem}, so the server cannot be given an owner: open the app through its URL, whose sign-in sets it`,
  },
  INVALID_JSON: { status: 400, message: ({ problem }: { problem: string }) => `the request body is not valid JSON: ${problem}` },
  INVALID_LINES: { status: 400, message: countMessage('lines') },
  INVALID_NAME: {
    status: 400,
    message: ({ name }: { name: string }) => `"${name}" is not a manifest name: list deleted servers with GET /snapshots/deleted`,
  },
  INVALID_PAGE: {
    status: 400,
    message: ({ param, problem }: { param: string; problem: string }) => `?${param}= ${problem}`,
  },
  INVALID_PATH: { status: 400, message: 'the log stream path is not valid: use /ws/logs or /ws/logs/{id}' },
  INVALID_QUERY: {
    status: 400,
    message: ({ watch }: { watch: string }) =>
      `watch=${watch} is not a watch value: use watch=1 for the event stream, or leave watch out for the list`,
  },
  INVALID_TAIL: { status: 400, message: countMessage('tail') },
  INVALID_WINDOW: {
    status: 400,
    message: ({ value, min, max }: { value: unknown; min: string; max: string }) =>
      `"window" must be a duration from ${min} to ${max}, such as 30m, 2h or 90s (a bare number is seconds), not ${JSON.stringify(value)}: ` +
      `change ?window= or leave it out for the whole history kept (${max}; controller.usageHistoryMinutes in the config)`,
  },

  // --- 401, 403 ---
  UNAUTHENTICATED: {
    status: 401,
    message: 'this service is reached through the Databricks Apps front door, which signs you in and sends X-Forwarded-Email: open the app URL instead',
  },
  HOST_NOT_ALLOWED: {
    status: 403,
    message: ({ host, port }: { host: string; port: number | undefined }) =>
      `this service does not answer to the host "${host}": open it as http://localhost:${port}/, ` +
      'or add that name to DEVBOX_ALLOWED_HOSTS',
  },
  ORIGIN_NOT_ALLOWED: { status: 403, message: 'requests are not accepted from pages of this origin' },
  OWNER_ONLY: {
    status: 403,
    message: ({ server, act }: { server: string; act: string }) =>
      `only the owner of server "${server}" or an admin may ${act}: ask its owner (GET /servers/{id}/access names them)`,
  },
  PORT_NOT_FORWARDED: {
    status: 403,
    message: ({ port, why }: { port: number | string; why: string }) => `port ${port} is not forwarded through this editor's address: ${why}`,
  },

  // --- 404 Not Found ---
  EDITOR_NOT_FOUND: {
    status: 404,
    message: ({ port }: { port: number }) =>
      `no running editor server listens on port ${port}: start the server (POST /servers/{id}/start) ` +
      'and open the port listed by GET /servers',
  },
  MANIFEST_NOT_FOUND: {
    status: 404,
    message: ({ file, id }: { file: string; id: string }) =>
      `${file} is missing: put the file back, or DELETE /servers/${id} to delete the server`,
  },
  NOT_DELETED: {
    status: 404,
    message: ({ name, days }: { name: string; days: number }) =>
      `no deleted server named ${name} is kept (a delete is kept ${days} days, persistence.retainDeletedDays)`,
  },
  NOT_FOUND: { status: 404, message: 'nothing is at this path' },
  SERVER_NOT_FOUND: { status: 404, message: 'no server has this id: list the servers with GET /servers' },
  SNAPSHOT_NOT_FOUND: { status: 404, message: 'no such snapshot is kept: list the server\'s snapshots with GET /servers/{id}/snapshots' },
  TEMPLATE_NOT_FOUND: { status: 404, message: 'no template has this id: GET /templates lists them' },

  // --- 405, 408 ---
  METHOD_NOT_ALLOWED: {
    status: 405,
    message: 'this service is not a forward proxy, so CONNECT is refused: open editors at /vscode/{port}/ instead',
  },
  REQUEST_TIMEOUT: { status: 408, message: 'the request did not arrive in time: send the whole request at once' },

  // --- 409 Conflict ---
  CAPACITY_EXCEEDED: { status: 409, message: 'the server cannot start now: no room under the capacity limits' },
  HOST_REQUIREMENTS_UNMET: {
    status: 409,
    message: 'the workspace\'s devcontainer.json asks hostRequirements this machine or the capacity limits cannot give: lower them in the file, or set spec.devcontainer: ignore',
  },
  CONFLICT: { status: 409, message: 'the manifest kept changing while it was being written: try again' },
  MANAGED_BY_GIT: {
    status: 409,
    message: ({ server, repository, instead }: { server: string; repository: string; instead: string }) =>
      `server "${server}" is declared by the git repository ${repository}, which owns its manifest: ${instead} there and push (POST /sync applies it at once)`,
  },
  MANIFEST_INVALID: {
    status: 409,
    message: ({ file, problems }: { file: string; problems: readonly string[] }) =>
      `the manifest ${file} is invalid; fix it by hand first: ${problems.join('; ')}`,
  },
  MANIFEST_UNREADABLE: { status: 409, message: ({ file, problem }: { file: string; problem: string }) => `${file} ${problem}` },
  NAME_TAKEN: { status: 409, message: 'a server of that name exists: delete or rename it first' },
  /** A per-person limit (capacity.perPerson): the site's message names the person, the limit, its value, their use and the servers using it. */
  QUOTA_EXCEEDED: { status: 409, message: 'the request would pass a limit per person (capacity.perPerson): stop or delete one of your servers first' },
  NO_FREE_PORT: {
    status: 409,
    message: ({ min, max }: { min: number; max: number }) =>
      `no free port left in ${min}-${max}: delete a server, or widen ports in the config`,
  },
  NOTHING_TO_SNAPSHOT: {
    status: 409,
    message: ({ name }: { name: string }) => `server ${name} has no manifest to snapshot right now: try again in a moment`,
  },
  PERSISTENCE_DISABLED: {
    status: 409,
    message: 'this service keeps no snapshots: set DEVBOX_PERSIST_TO (or persistence.target in the config file) to a folder or to dbfs:/Volumes/<catalog>/<schema>/<volume>, and restart it',
  },
  PORT_TAKEN: { status: 409, message: 'the port is taken: choose another port or leave it out' },
  SERVER_NOT_STOPPED: {
    status: 409,
    message: ({ name, phase }: { name: string; phase: string }) =>
      `server ${name} is ${phase.toLowerCase()}: stop it (POST /servers/{id}/stop), then restore a snapshot into it`,
  },
  SERVER_RESTORING: { status: 409, message: 'the server is being restored: try again once its Restored condition is True' },
  SERVER_RUNNING: {
    status: 409,
    message: 'a snapshot is restored into a stopped server only: stop it first (POST /servers/{id}/stop), then restore',
  },
  SHARING_NEEDS_SIGN_ON: {
    status: 409,
    message: 'sharing needs people to sign in, and on this run no one does (no identity headers, and identity is not required): '
      + 'deploy the service as a Databricks app, or set DEVBOX_REQUIRE_IDENTITY=1 behind a proxy that signs users in and forwards X-Forwarded-Email',
  },
  TEMPLATE_INVALID: { status: 409, message: 'the template cannot be used until its file is fixed' },
  UNKNOWN_EXTENSION_GROUP: {
    status: 409,
    message: ({ template, problem, file }: { template: string; problem: string; file: string }) =>
      `template "${template}" names an extension group the config does not define (${problem}): add it to extensionGroups in the config, or take it out of spec.extensionGroups in ${file}`,
  },
  WORKSPACE_NOT_EMPTY: {
    status: 409,
    message: ({ server, entries }: { server: string; entries: readonly string[] }) =>
      `the workspace of server "${server}" already holds files (${entries.slice(0, 3).join(', ')}${entries.length > 3 ? ', …' : ''}): ` +
      'a source fills an empty workspace only; create a new server for it',
  },

  // --- 413 Content Too Large ---
  BODY_TOO_LARGE: { status: 413, message: 'the request body is too large: send a smaller body' },
  SETTINGS_TOO_LARGE: { status: 413, message: ({ problem }: { problem: string }) => `settings ${problem}` },
  UPLOAD_TOO_LARGE: {
    status: 413,
    message: ({ maxMb }: { maxMb: number }) =>
      `zip_file is larger than ${maxMb} MB (workspace.maxUploadMb in the config): send a smaller archive`,
  },
  WORKSPACE_TOO_LARGE: { status: 413, message: 'the workspace is larger than persistence.maxWorkspaceMb' },

  // --- 417, 422, 431 ---
  EXPECTATION_FAILED: {
    status: 417,
    message: 'the only expectation this service meets is "Expect: 100-continue": leave the Expect header out',
  },
  WORKSPACE_SOURCE_FAILED: { status: 422, message: 'the workspace source could not be applied: fix the source and try again' },
  HEADERS_TOO_LARGE: {
    status: 431,
    message: ({ limit }: { limit: number }) => `the request's headers are larger than ${limit} bytes: send fewer or shorter headers`,
  },

  // --- 5xx ---
  EDITOR_FAILED: { status: 500, message: 'the editor failed to start: see GET /servers/{id}/logs' },
  INTERNAL: { status: 500, message: 'the service failed to handle this request; its log has the details' },
  RESTORE_FAILED: {
    status: 500,
    message: ({ name }: { name: string }) =>
      `server "${name}" was restored but the controller has not taken it up: see GET /health and the log`,
  },
  EDITOR_UNAVAILABLE: {
    status: 502,
    message: ({ port, cause }: { port: number; cause: string }) =>
      `the editor on port ${port} did not answer (${cause}); ` +
      'it may be starting or may have crashed: check GET /servers/{id}/health and its logs',
  },
  PORT_NOT_LISTENING: {
    status: 502,
    message: ({ port }: { port: number }) =>
      `nothing listens on port ${port} in this editor: start the program in the editor's terminal ` +
      '(listening on localhost, 127.0.0.1 or 0.0.0.0), then reload',
  },
  PORT_UNAVAILABLE: {
    status: 502,
    message: ({ port, cause }: { port: number; cause: string }) =>
      `the program on port ${port} did not answer (${cause}): it may have stopped, look at the editor's terminal`,
  },
  EDITOR_STARTING: {
    status: 503,
    message: ({ server, seconds }: { server: string; seconds: number }) =>
      `server "${server}" was stopped for idleness and is starting again: retry in ${seconds} s`,
  },
  MANIFESTS_FOLDER_MISSING: {
    status: 503,
    message: ({ dir }: { dir: string }) =>
      `the manifests folder ${dir} is missing: bring it back (the service waits for it), then try again`,
  },
  PERSISTENCE_UNAVAILABLE: {
    status: 503,
    message: ({ failure, hint }: { failure: string; hint: string }) => `the persistence target failed (${failure}): ${hint}`,
  },
  SERVER_FILES_UNAVAILABLE: {
    status: 503,
    message: ({ failure }: { failure: string }) =>
      `${failure}; nothing at the persistence target changed: try again once the server's storage answers (on Kubernetes: the API server and the node of its Pod)`,
  },
  SHUTTING_DOWN: { status: 503, message: 'the service is shutting down: connect again once it is back' },
  STANDBY: {
    status: 503,
    message: ({ holder }: { holder: string }) =>
      `this replica is a standby (leader election): ${holder ? `${holder} leads and serves` : 'no replica leads yet'}; ` +
      'reach the service through its Kubernetes Service, which routes to the Ready leader',
  },
  TOO_MANY_WATCHERS: {
    status: 503,
    message: ({ max }: { max: number }) =>
      `${max} watch streams are open already: close unused dashboard tabs, or poll GET /servers instead, and try again`,
  },
} as const satisfies Record<string, Definition>;

type Catalogue = typeof ERRORS;
export type ErrorCode = keyof Catalogue;

/** The statuses a site may give a code instead of its own: none for most. */
type OtherStatus<C extends ErrorCode> = Catalogue[C] extends { alsoStatus: infer Also }
  ? Also extends readonly number[] ? Catalogue[C]['status'] | Also[number] : number
  : never;

export interface RaiseOptions<Status extends number = number> {
  /** Machine-readable detail for the envelope's `error.details` (the problems, a limit, a record). */
  details?: unknown;
  /** Only for the codes whose catalogue entry allows another status (BAD_REQUEST, BAD_HANDSHAKE). */
  status?: Status;
}

/** A template's arguments; or, for fixed text, the site's own text (the default without it). */
export type RaiseArgs<C extends ErrorCode> = Catalogue[C]['message'] extends (args: infer A) => string
  ? [args: A, options?: RaiseOptions<OtherStatus<C>>]
  : [message?: string, options?: RaiseOptions<OtherStatus<C>>];

function resolve(code: ErrorCode, args: readonly unknown[]): [status: number, message: string, details: unknown] {
  const definition: Definition = ERRORS[code];
  const [first, options] = args as [unknown, RaiseOptions | undefined];
  const message = typeof definition.message === 'function'
    ? (definition.message as Template<unknown>)(first)
    : (first as string | undefined) ?? definition.message;
  const status = options?.status ?? definition.status;
  if (!allowsStatus(definition, status)) {
    throw new TypeError(`error ${code} is answered with ${definition.status}, not ${status}: give it another status in src/core/error-catalogue.ts first`);
  }
  return [status, message, options?.details];
}

function allowsStatus(definition: Definition, status: number): boolean {
  if (status === definition.status) return true;
  const also = definition.alsoStatus;
  if (also === 'client error') return Number.isInteger(status) && status >= 400 && status < 500;
  return also?.includes(status) ?? false;
}

/** The error for `code`, with its status and its message (the template filled, or the site's text). */
export function apiError<C extends ErrorCode>(code: C, ...args: RaiseArgs<C>): HttpError {
  const [status, message, details] = resolve(code, args);
  return new HttpError(status, code, message, details);
}

/**
 * A class of its own for one code, for a layer that wants `instanceof` (fastify's
 * `new FST_ERR_X(…)`): `class ConflictError extends errorClass('CONFLICT') {}`.
 */
export function errorClass<C extends ErrorCode>(code: C) {
  return class extends HttpError {
    constructor(...args: RaiseArgs<C>) {
      const [status, message, details] = resolve(code, args);
      super(status, code, message, details);
    }
  };
}

/** The status a code is answered with. */
export const statusOf = (code: ErrorCode): number => ERRORS[code].status;

/** 404 SERVER_NOT_FOUND for an id no server has (or the requester may not see). */
export const notFound = (id: string): HttpError =>
  apiError('SERVER_NOT_FOUND', `no server has the id "${id}": list the servers with GET /servers`);

// Every route the service answers, as OpenAPI path items: the REST API (src/api/routes/), the
// service's own routes (health, metrics, config, sync), the log streams (src/logs/stream.ts), the
// editor proxy (src/proxy/) and the dashboard (src/api/dashboard.ts). JSON request bodies are
// attached by document.ts from schemas/api/; test/api/openapi.test.ts holds this list to the
// routes the running service answers.
import { AUDIT_PATHS } from './paths-audit.ts';
import { PORTS_PATHS } from './paths-ports.ts';
import { SHARING_PATHS } from './paths-sharing.ts';
import { USAGE_PATHS } from './paths-usage.ts';
import { ref } from './shapes.ts';

type Json = Record<string, unknown>;

const json = (schema: Json, description: string): Json => ({ description, content: { 'application/json': { schema } } });
const error = (description: string): Json => json(ref('Error'), description);
const param = (name: string): Json => ({ $ref: `#/components/parameters/${name}` });

const NO_SERVER = error('No server has this id, or the requester may not see it (`SERVER_NOT_FOUND`).');
const BAD_BODY = error('The body is not valid (`INVALID_BODY`, `INVALID_JSON`, `BODY_TOO_COMPLEX`): the message and `details.problems` list every problem.');
const TOO_LARGE = error('The body or its `settings` are too large (`BODY_TOO_LARGE`, `SETTINGS_TOO_LARGE`).');
const NOT_CHANGEABLE = error('The manifest cannot be changed now: invalid on disk (`MANIFEST_INVALID`), declared by a GitOps repository (`MANAGED_BY_GIT`), or changed by someone else again and again (`CONFLICT`).');
const FOLDER_MISSING = error('The manifests folder is missing (`MANIFESTS_FOLDER_MISSING`): the service waits for it to come back.');
const CREATE_CONFLICT = error('The port asked for is taken (`PORT_TAKEN`), no port is free in the range (`NO_FREE_PORT`), or the requester has as many servers as capacity.perPerson.servers allows (`QUOTA_EXCEEDED`, its `details` a QuotaRefusal).');
const CREATED = json(ref('CreatedServer'), 'Created, stopped: the manifest is written and the port and workspace assigned.');
const NO_PERSISTENCE = error('The service keeps no snapshots (`PERSISTENCE_DISABLED`): set DEVBOX_PERSIST_TO.');
const STORE_FAILED = error('The persistence target failed (`PERSISTENCE_UNAVAILABLE`), or the server\'s files could not be reached in its storage (`SERVER_FILES_UNAVAILABLE`); the message says what to do.');

/** The form of the multipart routes: a git repository or a ZIP archive. */
const SOURCE_FIELDS: Record<string, Json> = {
  github_url: { type: 'string', description: 'A git repository URL to clone into the workspace (a scheme the config allows).' },
  git_ref: { type: 'string', pattern: '^[A-Za-z0-9._/][A-Za-z0-9._/-]{0,199}$', description: 'A branch or tag of github_url.' },
  zip_file: { type: 'string', contentMediaType: 'application/zip', description: 'A .zip archive extracted into the workspace (at most workspace.maxUploadMb).' },
};
const SOURCE_RULE = 'Give either github_url or zip_file, not both.';
/** A form field holding JSON: the same schema as the field of POST /servers. */
const jsonField = (field: string, what: string): Json => ({
  type: 'string', contentMediaType: 'application/json', contentSchema: ref(`CreateServer/properties/${field}`), description: `${what}, as JSON in a string.`,
});
const form = (properties: Record<string, Json>, required: string[], description: string): Json => ({
  required: true,
  content: { 'multipart/form-data': { schema: { type: 'object', description, required, properties } } },
});

/** The API's part of a path's operations, with the tag and the common answers. */
const op = (tag: string, operationId: string, summary: string, responses: Record<string, Json>, more: Json = {}): Json =>
  ({ tags: [tag], operationId, summary, ...more, responses });

const lifecycle = (verb: string, id: string, summary: string, extra: Record<string, Json>, description: string): Json =>
  op('servers', id, summary, {
    200: json(ref('LifecycleEnvelope'), `The server ${verb}.`),
    202: json(ref('LifecycleEnvelope'), `Not yet ${verb} when the bounded wait ended; the controller goes on (poll GET /servers/{id}).`),
    404: NO_SERVER,
    409: NOT_CHANGEABLE,
    ...extra,
  }, { parameters: [param('ServerId')], description });

const installs = (id: string, summary: string, description: string): Json =>
  op('multi-step', id, summary, {
    200: json(ref('ExtensionResults'), 'Every extension named has an outcome.'),
    202: json(ref('ExtensionResults'), 'Installs still run after 60 s: `results` says which are pending.'),
    400: BAD_BODY,
    404: NO_SERVER,
    409: NOT_CHANGEABLE,
  }, { parameters: [param('ServerId')], description });

/** The editor proxy forwards every method; these are the ones documented. */
const PROXY_METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

function proxy(prefix: 'vscode' | 'editor'): Json {
  const item: Json = { parameters: [param('Port'), param('EditorPath')] };
  const summary = prefix === 'vscode' ? 'The editor of the server on {port}, forwarded' : 'The same, under its other name';
  for (const method of PROXY_METHODS) {
    item[method] = {
      tags: ['editor proxy'],
      operationId: `${prefix}Proxy${method[0].toUpperCase()}${method.slice(1)}`,
      summary,
      description: 'Forwarded to the code-server of a running server this service manages, which the requester may reach; '
        + 'WebSocket upgrades too. Credentials (the service\'s cookies, Authorization) are not passed on, and the API\'s CORS '
        + 'headers never go with an editor\'s answers. `/' + prefix + '/{port}` without the slash redirects (308) to it.',
      responses: {
        default: { description: 'The editor\'s own answer.' },
        404: error('No running server this service manages is on {port}, or the requester may not reach it (`EDITOR_NOT_FOUND`).'),
        502: error('The editor did not answer (`EDITOR_UNAVAILABLE`).'),
        503: error('The server was stopped for idleness and is starting again (`EDITOR_STARTING`, with Retry-After); a browser navigation gets a page that reloads into the editor.'),
      },
    };
  }
  return item;
}

const dashboardPage = (operationId: string, summary: string): Json => ({
  get: op('dashboard', operationId, summary, {
    200: { description: 'The dashboard\'s page.', content: { 'text/html': { schema: { type: 'string' } } } },
    503: { description: 'The dashboard has not been built (`npm run build`): a page that says so.', content: { 'text/html': { schema: { type: 'string' } } } },
  }),
});

/**
 * GET /servers a page at a time, and filtered (src/api/server-pages.ts): any of these makes the
 * answer a page, in manifest-name order; none gives the whole list as before.
 */
const PAGE_PARAMETERS = [
  { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 1000 }, description: 'At most this many servers; when more remain, the answer\'s `X-Continue` header holds the token of the next page.' },
  { name: 'continue', in: 'query', schema: { type: 'string' }, description: 'The `X-Continue` token of the previous page: the next page starts right after it, whatever was added or removed meanwhile.' },
  { name: 'owner', in: 'query', schema: { type: 'string' }, description: 'Only servers of this owner (`owner`, case-insensitive).' },
  { name: 'status', in: 'query', schema: { type: 'string' }, description: 'Only servers with this `status` (running, stopped, starting, stopping, failed; several with commas).' },
  { name: 'name_prefix', in: 'query', schema: { type: 'string' }, description: 'Only servers whose `name` (case-insensitive) or `manifest` starts with this.' },
];

export const PATHS: Record<string, Json> = {
  ...AUDIT_PATHS,
  '/servers': {
    get: op('servers', 'listServers', 'List servers, or watch them', {
      200: {
        description: 'Every server the requester may see; with `watch=1`, a stream of server-sent events: ADDED for each server, SYNCED, then ADDED, MODIFIED and DELETED as they happen (`: ping` comments keep it open). The list is written in chunks of about 64 KiB of whole messages, each once the connection took the one before; changes made meanwhile follow SYNCED, the latest record of each server.',
        content: {
          'application/json': { schema: { type: 'array', items: ref('ServerRecord') } },
          'text/event-stream': {
            schema: { type: 'string', description: 'Events of lines `id: n` and `data: ` followed by a WatchEvent as JSON (x-event-data).' },
            'x-event-data': ref('WatchEvent'),
          },
        },
        headers: {
          'X-Continue': { description: 'With `limit`, when more servers remain: the token to give as `continue` for the next page.', schema: { type: 'string' } },
        },
      },
      400: error('`watch` is neither 1 nor 0 (`INVALID_QUERY`), or a page parameter is not valid (`INVALID_PAGE`: the message names it and what to give).'),
      503: error('Too many watch streams are open (`TOO_MANY_WATCHERS`), or the service is shutting down.'),
    }, { parameters: [
      { name: 'watch', in: 'query', schema: { enum: ['0', '1'] }, description: '1: stream the list and its changes (text/event-stream).' },
      ...PAGE_PARAMETERS,
    ] }),
    post: op('servers', 'createServer', 'Create a server', {
      201: CREATED, 400: BAD_BODY, 409: CREATE_CONFLICT, 413: TOO_LARGE, 503: FOLDER_MISSING,
    }, { description: 'Writes a new, stopped server\'s manifest and answers once the controller has assigned its port and workspace and installed its extensions (installs still running after 2 s go on in the background: `phase` and `extension_status` show them).' }),
  },
  '/servers/create-with-workspace': {
    post: op('servers', 'createServerWithWorkspace', 'Create a server with a workspace from git or a ZIP', {
      201: json(ref('WorkspaceCreated'), 'Created, its workspace filled from the source.'),
      400: error('The form is not valid, or the source is refused before anything is written (`INVALID_BODY`, `INVALID_GIT_URL`, `INVALID_ARCHIVE`).'),
      409: CREATE_CONFLICT,
      413: error('zip_file is larger than workspace.maxUploadMb (`UPLOAD_TOO_LARGE`).'),
      422: error('The source could not be applied (`WORKSPACE_SOURCE_FAILED`): the server was deleted again.'),
    }, {
      requestBody: form({
        name: ref('CreateServer/properties/name'),
        extensions: jsonField('extensions', 'Extension ids'),
        extension_groups: jsonField('extension_groups', 'Extension groups of the config'),
        settings: jsonField('settings', 'Editor settings'),
        ...SOURCE_FIELDS,
      }, ['name'], `The fields of POST /servers, and a workspace source. ${SOURCE_RULE}`),
    }),
  },
  '/servers/create-from-template': {
    post: op('servers', 'createServerFromTemplate', 'Create a server from a template', {
      201: CREATED,
      400: BAD_BODY,
      404: error('No template has this id, or it is in another tab (`TEMPLATE_NOT_FOUND`).'),
      409: error('The template\'s file is invalid or names what the config lacks (`TEMPLATE_INVALID`, `UNKNOWN_EXTENSION_GROUP`), or no port is free.'),
    }),
  },
  '/servers/create-metadata': {
    post: op('multi-step', 'createServerMetadata', 'Multi-step: create a server from a name only', {
      201: CREATED, 400: BAD_BODY, 409: CREATE_CONFLICT, 503: FOLDER_MISSING,
    }, { description: 'The first step of a creation in several steps: install extensions, apply group settings, clone a workspace, then start.' }),
  },
  '/servers/refresh-all': {
    post: op('servers', 'refreshAllServers', 'Compare every server\'s process and /healthz with its recorded status', {
      200: json(ref('RefreshAll'), 'Every server the requester may see, refreshed.'),
    }),
  },
  '/servers/{id}': {
    parameters: [param('ServerId')],
    get: op('servers', 'getServer', 'Read a server', { 200: json(ref('ServerRecord'), 'The server record.'), 404: NO_SERVER }),
    delete: op('servers', 'deleteServer', 'Delete a server, its editor and its files', {
      200: json(ref('Deleted'), 'Deleted: the editor stopped, the workspace and the manifest removed.'),
      202: json(ref('Deleted'), 'Still being deleted when the bounded wait ended.'),
      403: error('Under `access: owner`, the server is shared with the requester, who may use it but not delete it (`OWNER_ONLY`).'),
      404: NO_SERVER,
      409: error('A GitOps repository declares the server (`MANAGED_BY_GIT`): delete it there.'),
      503: FOLDER_MISSING,
    }),
  },
  '/servers/{id}/start': {
    post: lifecycle('started', 'startServer', 'Start a server', {
      409: error('No room (`CAPACITY_EXCEEDED`, with `details.limit`), the owner runs as many editors or uses as much memory as capacity.perPerson allows (`QUOTA_EXCEEDED`, its `details` a QuotaRefusal), or the manifest cannot be changed (`MANIFEST_INVALID`, `MANAGED_BY_GIT`).'),
      500: error('The editor failed to start (`EDITOR_FAILED`, with the record in `details`).'),
    }, 'Sets spec.running and answers once the editor answers /healthz.'),
  },
  '/servers/{id}/stop': {
    post: lifecycle('stopped', 'stopServer', 'Stop a server', {}, 'Clears spec.running and answers once the editor\'s process group has ended (SIGTERM, then SIGKILL after the grace period).'),
  },
  '/servers/{id}/restart': {
    post: lifecycle('restarted', 'restartServer', 'Restart a server', {
      409: error('No room (`CAPACITY_EXCEEDED`), a limit per person (`QUOTA_EXCEEDED`), or the manifest cannot be changed.'),
      500: error('The editor failed to start again (`EDITOR_FAILED`).'),
    }, 'Stops the editor and starts a new one (a new pid).'),
  },
  '/servers/{id}/health': {
    get: op('servers', 'getServerHealth', 'A server\'s health: process, /healthz, CPU and memory', {
      200: json(ref('ServerHealth'), 'Read now.'), 404: NO_SERVER,
    }, { parameters: [param('ServerId')] }),
  },
  '/servers/{id}/refresh-status': {
    post: op('servers', 'refreshServerStatus', 'Compare a server\'s process and /healthz with its recorded status', {
      200: json(ref('RefreshResult'), 'Refreshed.'), 404: NO_SERVER,
    }, { parameters: [param('ServerId')] }),
  },
  '/servers/{id}/logs': {
    get: op('servers', 'getServerLogs', 'A server\'s last log lines', {
      200: json(ref('ServerLogs'), 'The lines, oldest first.'),
      400: error('`lines` is not a whole number from 1 to 1000 (`INVALID_LINES`).'),
      404: NO_SERVER,
    }, { parameters: [param('ServerId'), { name: 'lines', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 1000, default: 50 }, description: 'How many lines.' }] }),
  },
  ...SHARING_PATHS,
  '/servers/{id}/events': {
    get: op('servers', 'getServerEvents', 'What recently happened to a server', {
      200: json(ref('ServerEvents'), 'The events, oldest first.'), 404: NO_SERVER,
    }, { parameters: [param('ServerId')] }),
  },
  ...USAGE_PATHS,
  ...PORTS_PATHS,
  '/servers/{id}/snapshots': {
    get: op('snapshots', 'listServerSnapshots', 'A server\'s snapshots at the persistence target', {
      200: json(ref('Snapshots'), 'Newest first.'), 404: NO_SERVER, 409: NO_PERSISTENCE, 503: STORE_FAILED,
    }, { parameters: [param('ServerId')] }),
  },
  '/servers/{id}/snapshot': {
    post: op('snapshots', 'snapshotServer', 'Keep a server\'s work now: an incremental snapshot of its manifest, workspace and settings', {
      200: json(ref('SnapshotTaken'), 'Committed (or the latest, when nothing changed since).'),
      404: NO_SERVER,
      409: error('The service keeps no snapshots (`PERSISTENCE_DISABLED`), or the server is being restored (`SERVER_RESTORING`).'),
      413: error('The workspace holds more than persistence.maxWorkspaceMb (`WORKSPACE_TOO_LARGE`): the previous snapshot stays current.'),
      503: STORE_FAILED,
    }, { parameters: [param('ServerId')] }),
  },
  '/servers/{id}/restore': {
    post: op('snapshots', 'restoreServer', 'Restore a snapshot (the latest unless snapshot_id names one) into a stopped server', {
      200: json(ref('SnapshotRestored'), 'Restored; local files newer than the snapshot are kept, damaged ones reported.'),
      400: BAD_BODY,
      404: error('No server has this id (`SERVER_NOT_FOUND`), or it has no such snapshot (`SNAPSHOT_NOT_FOUND`).'),
      409: error('The server is not stopped (`SERVER_RUNNING`, `SERVER_NOT_STOPPED`), is being restored (`SERVER_RESTORING`), or the service keeps no snapshots (`PERSISTENCE_DISABLED`).'),
      503: STORE_FAILED,
    }, {
      parameters: [param('ServerId')],
      requestBody: { required: false, content: { 'application/json': { schema: { type: 'object', additionalProperties: false, properties: { snapshot_id: { type: 'string' } } } } } },
    }),
  },
  '/snapshots/deleted': {
    get: op('snapshots', 'listDeletedServers', 'Servers deleted within persistence.retainDeletedDays, which can be brought back', {
      200: json(ref('DeletedServers'), 'Each with its last snapshot.'), 409: NO_PERSISTENCE, 503: STORE_FAILED,
    }),
  },
  '/snapshots/deleted/{name}/restore': {
    post: op('snapshots', 'undeleteServer', 'Undo a delete: the server comes back from its last snapshot, with its id, manifest and files', {
      201: CREATED,
      400: error('The name is not a manifest name (`INVALID_NAME`).'),
      403: error('Under `access: owner`, the requester is neither the owner of the server kept nor an admin (`OWNER_ONLY`).'),
      404: error('No deleted server of that name is kept (`NOT_DELETED`).'),
      409: error('A server of that name exists (`NAME_TAKEN`), or the service keeps no snapshots (`PERSISTENCE_DISABLED`).'),
      503: STORE_FAILED,
    }, { parameters: [{ name: 'name', in: 'path', required: true, schema: { type: 'string' }, description: 'The manifest name of the deleted server.' }] }),
  },
  '/servers/{id}/manifest': {
    get: op('servers', 'getServerManifest', 'A server\'s manifest file as it is on disk', {
      200: json(ref('ServerManifest'), 'The file\'s path and text.'),
      404: error('No server has this id (`SERVER_NOT_FOUND`), or its file is missing (`MANIFEST_NOT_FOUND`).'),
      409: error('The file cannot be read safely (`MANIFEST_UNREADABLE`: a link, a FIFO, too large).'),
    }, { parameters: [param('ServerId')] }),
  },
  '/servers/{id}/install-extensions': {
    post: installs('installExtensions', 'Multi-step: add extensions and install them', 'Adds the ids to spec.extensions and answers once each has an outcome.'),
  },
  '/servers/{id}/install-extension': {
    post: installs('installExtension', 'Multi-step: add one extension and install it', 'Adds the id to spec.extensions and answers once it has an outcome.'),
  },
  '/servers/{id}/apply-group-settings': {
    post: installs('applyGroupSettings', 'Multi-step: add an extension group of the config', 'Adds the group to spec.extensionGroups (its extensions and settings); `results` are the group\'s extensions. An unknown group is 400 with the config\'s group names.'),
  },
  '/servers/{id}/clone-workspace': {
    post: op('multi-step', 'cloneWorkspace', 'Multi-step: fill an empty workspace from git or a ZIP', {
      200: json(ref('WorkspaceCloned'), 'The workspace holds the source.'),
      400: error('The form is not valid or the source is refused (`INVALID_BODY`, `INVALID_GIT_URL`, `INVALID_ARCHIVE`).'),
      404: NO_SERVER,
      409: error('The workspace already holds files (`WORKSPACE_NOT_EMPTY`), or the manifest cannot be changed.'),
      413: error('zip_file is larger than workspace.maxUploadMb (`UPLOAD_TOO_LARGE`).'),
      422: error('The source could not be applied (`WORKSPACE_SOURCE_FAILED`): the server is kept without it.'),
    }, { parameters: [param('ServerId')], requestBody: form(SOURCE_FIELDS, [], SOURCE_RULE) }),
  },
  '/manifests': {
    get: op('servers', 'listManifests', 'Every manifest file with its problems', {
      200: json({ type: 'array', items: ref('ManifestEntry') }, 'The files the controller knows, valid or not.'),
    }),
  },
  '/templates': {
    get: op('templates', 'listTemplates', 'The template gallery, by tab', { 200: json(ref('Templates'), 'Valid templates by tab, and the invalid files\' problems.') }),
  },
  '/config': {
    get: op('service', 'getConfig', 'The configuration clients need, and where it came from', { 200: json(ref('Config'), 'The config in use.') }),
  },
  '/sync': {
    post: op('service', 'syncRepositories', 'Sync the GitOps repositories now', {
      200: json(ref('SyncResult'), 'Both syncs are done (or none is configured: the message says how to set one up).'),
      202: json(ref('SyncResult'), 'Still syncing after 60 s: watch git_sync in GET /health.'),
    }),
  },
  '/health': {
    get: op('service', 'getServiceHealth', 'The service\'s own health', { 200: json(ref('ServiceHealth'), '`healthy`, or `degraded` with `problems`.') }),
  },
  '/livez': {
    get: op('service', 'getLiveness', 'Whether the process is alive (the liveness probe)', {
      200: json({ type: 'object', required: ['status'], properties: { status: { enum: ['alive', 'standby'] }, leader: { type: 'string' } } },
        '`alive`; a replica that waits for the Lease (runtime.kubernetes.leaderElection) answers `standby`, naming the `leader`. Answered at once, also while the service starts, without identity.'),
    }),
  },
  '/metrics': {
    get: op('service', 'getMetrics', 'Prometheus metrics of the fleet and the service', {
      200: { description: 'The Prometheus text format, version 0.0.4. Absent (404) when the service runs with DEVBOX_METRICS=0.', content: { 'text/plain': { schema: { type: 'string' } } } },
    }),
  },
  '/openapi.json': {
    get: op('service', 'getOpenApiDocument', 'This document', { 200: json({ type: 'object' }, 'The OpenAPI 3.1 description of the service.') }),
  },
  '/ws/logs': {
    get: op('logs', 'streamAllLogs', 'WebSocket: the log stream of every server', {
      101: { description: 'Switching Protocols: one JSON text frame (LogMessage) per log line, of every server the requester may see; the last `tail` lines first.', content: { 'application/json': { schema: ref('LogMessage') } } },
      400: error('`tail` is not a whole number from 0 to 1000 (`INVALID_TAIL`), or not a WebSocket handshake (`BAD_HANDSHAKE`).'),
    }, { parameters: [param('Tail')], 'x-websocket': true, description: 'A WebSocket (GET with `Upgrade: websocket`). A client that falls more than 1 MiB behind is closed with 1013 and may reconnect.' }),
  },
  '/ws/logs/{id}': {
    get: op('logs', 'streamServerLogs', 'WebSocket: the log stream of one server', {
      101: { description: 'Switching Protocols: one JSON text frame (LogMessage) per log line of the server; the last `tail` lines first.', content: { 'application/json': { schema: ref('LogMessage') } } },
      400: error('`tail` is not valid (`INVALID_TAIL`), or not a WebSocket handshake (`BAD_HANDSHAKE`).'),
      404: NO_SERVER,
    }, { parameters: [param('ServerId'), param('Tail')], 'x-websocket': true, description: 'A WebSocket (GET with `Upgrade: websocket`).' }),
  },
  '/vscode/{port}/{path}': proxy('vscode'),
  '/editor/{port}/{path}': proxy('editor'),
  '/': dashboardPage('getDashboard', 'The web dashboard'),
  '/index.html': dashboardPage('getDashboardIndex', 'The web dashboard (its file name)'),
  '/assets/{file}': {
    get: op('dashboard', 'getDashboardAsset', 'A file of the dashboard\'s build', {
      200: { description: 'The file (script, style, image, font), cached for a year: its name changes with its content.', content: { '*/*': { schema: { type: 'string' } } } },
      404: error('The build has no such file (`NOT_FOUND`): reload the page for the current build\'s files.'),
    }, { parameters: [{ name: 'file', in: 'path', required: true, schema: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$' } }] }),
  },
};

/** Shared parameters (components.parameters). */
export const PARAMETERS: Record<string, Json> = {
  ServerId: { name: 'id', in: 'path', required: true, schema: { type: 'string' }, description: 'The server\'s id (`id` of its record).' },
  Port: { name: 'port', in: 'path', required: true, schema: { type: 'integer', minimum: 1, maximum: 65535 }, description: 'The server\'s port.' },
  EditorPath: { name: 'path', in: 'path', required: true, schema: { type: 'string' }, description: 'The rest of the path, slashes included, passed to the editor as it is (empty for the editor\'s start page).' },
  Tail: { name: 'tail', in: 'query', schema: { type: 'integer', minimum: 0, maximum: 1000, default: 100 }, description: 'How many recent lines to send first.' },
};

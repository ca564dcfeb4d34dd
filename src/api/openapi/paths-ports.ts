// The forwarded ports as OpenAPI path items: their listing (src/api/routes/ports.ts) and the
// proxy's paths to them (src/proxy/forwarded-ports.ts), with the listing's shape; paths.ts and
// shapes.ts spread them into the document.

type Json = Record<string, unknown>;

const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: Json, description: string): Json => ({ description, content: { 'application/json': { schema } } });
const error = (description: string): Json => json(ref('Error'), description);
const param = (name: string): Json => ({ $ref: `#/components/parameters/${name}` });

const FORWARDED_PORT: Json = {
  name: 'forwarded_port', in: 'path', required: true, schema: { type: 'integer', minimum: 1, maximum: 65535 },
  description: 'The port a program of the server listens on.',
};

/** The proxy forwards every method; these are the ones documented. */
const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

function forwarded(kind: 'proxy' | 'absproxy', summary: string, path: string): Json {
  const item: Json = { parameters: [param('Port'), FORWARDED_PORT, param('EditorPath')] };
  for (const method of METHODS) {
    item[method] = {
      tags: ['editor proxy'],
      operationId: `${kind}Port${method[0].toUpperCase()}${method.slice(1)}`,
      summary,
      description: `Forwarded to {forwarded_port} on the editor's host, ${path}, after the checks of the editor's own path (the requester must `
        + 'reach the editor of the server on {port}); WebSocket upgrades too; the same under `/editor/{port}/`. These are the paths '
        + 'code-server\'s own port proxy uses, so the links of VS Code\'s Ports view work. Any port counts, declared in devcontainer.json\'s '
        + 'forwardPorts or not, but on one machine only a port a program of this server listens on (its DEVBOX_SERVER_NAME); '
        + 'never the editor\'s port nor the service\'s.',
      responses: {
        default: { description: 'The program\'s own answer.' },
        403: error('The port is not this server\'s to forward: another program of the machine listens on it, or it is the editor\'s or the service\'s own (`PORT_NOT_FORWARDED`).'),
        404: error('No running server this service manages is on {port}, or the requester may not reach it (`EDITOR_NOT_FOUND`).'),
        502: error('Nothing listens on the port in this editor (`PORT_NOT_LISTENING`), or the program did not answer (`PORT_UNAVAILABLE`).'),
        503: error('The server was stopped for idleness and is starting again (`EDITOR_STARTING`).'),
      },
    };
  }
  return item;
}

export const PORTS_PATHS: Record<string, Json> = {
  '/servers/{id}/ports': {
    get: {
      tags: ['servers'], operationId: 'listServerPorts', summary: 'A server\'s forwarded ports and where each answers',
      description: 'The ports its devcontainer.json declares (forwardPorts, with portsAttributes), in the file\'s order; then, on the process '
        + 'runtime, the other ports its programs listen on now, by number. The editor\'s own port and the service\'s are never listed. '
        + 'Nothing listens while the server is not running.',
      parameters: [param('ServerId')],
      responses: {
        200: json(ref('ServerPorts'), 'The ports.'),
        404: error('No server has this id, or the requester may not see it (`SERVER_NOT_FOUND`).'),
      },
    },
  },
  '/vscode/{port}/proxy/{forwarded_port}/{path}': forwarded('proxy', 'A port of the server\'s programs, its path after the port', 'with the path after the port'),
  '/vscode/{port}/absproxy/{forwarded_port}/{path}': forwarded('absproxy', 'A port of the server\'s programs, its path whole', 'with the whole path as the browser asked it (for an app told its base path)'),
};

export const PORTS_SCHEMAS: Record<string, Json> = {
  ServerPorts: {
    type: 'array',
    description: 'A server\'s forwarded ports (GET /servers/{id}/ports).',
    items: {
      type: 'object',
      required: ['port', 'label', 'protocol', 'onAutoForward', 'declared', 'listening', 'url'],
      properties: {
        port: { type: 'integer', minimum: 1, maximum: 65535 },
        label: { type: ['string', 'null'], description: 'portsAttributes\' label; null when none is given.' },
        protocol: { enum: ['http', 'https'], description: 'portsAttributes\' protocol; `http` when none is given.' },
        onAutoForward: { type: 'string', description: 'portsAttributes\' onAutoForward (notify, openBrowser, openPreview, silent, ignore); `notify`, the default, when none is given.' },
        declared: { type: 'boolean', description: 'In devcontainer.json\'s forwardPorts.' },
        listening: { type: 'boolean', description: 'A program of the server listens on it now (on a cluster, where only the declared ports are looked at: it accepts a connection at the Pod\'s address).' },
        url: { type: 'string', description: 'Where it answers through the proxy: `/vscode/{port}/proxy/{forwarded_port}/`.' },
      },
    },
  },
};

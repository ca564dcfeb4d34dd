// The fake workspace's Files API (/api/2.0/fs/files and /api/2.0/fs/directories): Unity Catalog
// volumes kept in memory, answering like the real API (documented shapes and error codes), with
// knobs for what a real workspace does to a client: refusals, 5xx, dropped connections, slow
// answers, short pages. Only volumes a test adds exist.
import type { IncomingMessage, ServerResponse } from 'node:http';

export interface FilesFaults {
  /** Every Files API request answers 403 PERMISSION_DENIED (the volume is not a resource of the app). */
  deny?: boolean;
  /** The next `count` Files API requests answer this status. */
  failNext?: { status: 500 | 503; count: number };
  /** The next `count` Files API requests lose their connection: an upload after part of its body arrived. */
  dropNext?: number;
  /** Added before every Files API answer (20 ms is a realistic round trip to a workspace). */
  delayMs?: number;
  /** At most this many entries per listing page (the real API: 1000). */
  pageSize?: number;
  /** Error messages repeat the request's Authorization header, as a careless proxy might. */
  echoCredentials?: boolean;
}

export interface FilesStats {
  requests: { GET: number; PUT: number; HEAD: number; DELETE: number };
  /** Listing pages answered (GET on /fs/directories). */
  listPages: number;
  /** Body bytes received by uploads (cut-off ones included) and sent by downloads. */
  bytesIn: number;
  bytesOut: number;
  inFlight: number;
  maxInFlight: number;
}

interface StoredFile {
  bytes: Buffer;
  lastModified: number;
}

const emptyStats = (): FilesStats => ({ requests: { GET: 0, PUT: 0, HEAD: 0, DELETE: 0 }, listPages: 0, bytesIn: 0, bytesOut: 0, inFlight: 0, maxInFlight: 0 });

export class FakeVolumes {
  readonly stats: FilesStats = emptyStats();
  private readonly volumes = new Set<string>();
  private readonly files = new Map<string, StoredFile>();
  /** Directories inside volumes (each volume's root included); they outlive their last file, as on the real API. */
  private readonly dirs = new Set<string>();
  private faults: FilesFaults = {};
  private failuresLeft = 0;
  private dropsLeft = 0;

  /** `/Volumes/<catalog>/<schema>/<volume>`: a volume the test made. */
  addVolume(path: string): void {
    if (!/^\/Volumes\/[^/]+\/[^/]+\/[^/]+$/.test(path)) throw new Error(`a volume path is /Volumes/<catalog>/<schema>/<volume>, not ${path}`);
    this.volumes.add(path);
    this.dirs.add(path);
  }

  /** Replaces the fault settings (`{}` clears them); counts start again. */
  setFaults(faults: FilesFaults): void {
    this.faults = { ...faults };
    this.failuresLeft = faults.failNext?.count ?? 0;
    this.dropsLeft = faults.dropNext ?? 0;
  }

  resetStats(): void {
    Object.assign(this.stats, emptyStats());
  }

  file(path: string): Buffer | undefined {
    return this.files.get(path)?.bytes;
  }

  /** Writes a file as an upload would (tests use it to corrupt a stored object). */
  writeFile(path: string, bytes: Buffer): void {
    this.files.set(path, { bytes: Buffer.from(bytes), lastModified: Date.now() });
    for (const dir of ancestors(path)) if (this.volumeOf(dir)) this.dirs.add(dir);
  }

  filePaths(): string[] {
    return [...this.files.keys()].sort();
  }

  /** Answers one request below /api/2.0/fs/ whose bearer was already checked. */
  async handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const method = req.method as keyof FilesStats['requests'];
    if (method in this.stats.requests) this.stats.requests[method] += 1;
    this.stats.inFlight += 1;
    this.stats.maxInFlight = Math.max(this.stats.maxInFlight, this.stats.inFlight);
    res.once('close', () => { this.stats.inFlight -= 1; });
    res.on('error', () => {}); // the client may be gone before the answer

    if (this.dropsLeft > 0) {
      this.dropsLeft -= 1;
      // Wait for some of an upload's body, so the connection breaks in the middle of it.
      if (method === 'PUT' && Number(req.headers['content-length'] ?? 0) > 0) {
        await new Promise<void>((resolve) => {
          req.once('data', (chunk: Buffer) => { this.stats.bytesIn += chunk.length; resolve(); });
          req.once('end', resolve);
          req.once('error', () => resolve());
        });
      }
      req.socket.destroy();
      return;
    }
    const route = /^\/api\/2\.0\/fs\/(files|directories)(\/.*)$/.exec(url.pathname);
    let body: Buffer;
    try {
      body = await this.readBody(req);
    } catch {
      return; // the client went away mid-upload: nothing is stored
    }
    const delayMs = this.faults.delayMs;
    if (delayMs) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delayMs);
        res.once('close', () => { clearTimeout(timer); resolve(); });
      });
    }
    if (res.destroyed || req.socket.destroyed) return;

    const fail = (status: number, code: string, message: string, details?: unknown[]) => {
      const echoed = this.faults.echoCredentials ? ` (request had Authorization: ${req.headers.authorization})` : '';
      const text = JSON.stringify({ error_code: code, message: message + echoed, ...(details ? { details } : {}) });
      res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(method === 'HEAD' ? undefined : text);
    };
    if (this.failuresLeft > 0) {
      this.failuresLeft -= 1;
      const status = this.faults.failNext!.status;
      return status === 503
        ? fail(503, 'TEMPORARILY_UNAVAILABLE', 'The service is temporarily unavailable, please try again later')
        : fail(500, 'INTERNAL_ERROR', 'The server failed to handle the request');
    }
    let path: string;
    try {
      path = decodeURIComponent(route?.[2] ?? '');
    } catch {
      return fail(400, 'INVALID_PARAMETER_VALUE', 'The path is not correctly encoded');
    }
    if (!route || path.split('/').slice(1).some((segment) => segment === '' || segment === '.' || segment === '..')) {
      return fail(400, 'INVALID_PARAMETER_VALUE', `Invalid path: ${path}`);
    }
    const volume = this.volumeOf(path);
    if (!volume) {
      const named = /^\/Volumes\/([^/]+)\/([^/]+)\/([^/]+)/.exec(path);
      return fail(404, 'NOT_FOUND', named ? `Volume '${named.slice(1).join('.')}' does not exist.` : `Path ${path} is not in a Unity Catalog volume.`);
    }
    if (this.faults.deny) {
      const privilege = method === 'GET' || method === 'HEAD' ? 'READ VOLUME' : 'WRITE VOLUME';
      return fail(403, 'PERMISSION_DENIED', `User does not have ${privilege} on Volume '${volume.split('/').slice(2).join('.')}'.`);
    }
    if (route[1] === 'files') return this.onFile(method, path, url, body, res, fail);
    return this.onDirectory(method, path, url, res, fail);
  }

  private onFile(method: string, path: string, url: URL, body: Buffer, res: ServerResponse, fail: Fail): void {
    const stored = this.files.get(path);
    if (method === 'PUT') {
      if (this.dirs.has(path)) return fail(409, 'ALREADY_EXISTS', `A directory already exists at ${path}`);
      if (stored && url.searchParams.get('overwrite') === 'false') return fail(409, 'ALREADY_EXISTS', `The file being created already exists: ${path}`);
      const blocked = ancestors(path).find((dir) => this.files.has(dir));
      if (blocked) return fail(409, 'ALREADY_EXISTS', `A file already exists at ${blocked}`);
      // The whole body or nothing: a file is replaced only once its last byte arrived.
      this.writeFile(path, body);
      res.writeHead(204).end();
      return;
    }
    if (method === 'GET' || method === 'HEAD') {
      if (!stored) return fail(404, 'NOT_FOUND', `The file ${path} does not exist.`);
      res.writeHead(200, {
        'content-type': 'application/octet-stream',
        'content-length': stored.bytes.length,
        'last-modified': new Date(stored.lastModified).toUTCString(),
      });
      if (method === 'GET') this.stats.bytesOut += stored.bytes.length;
      res.end(method === 'GET' ? stored.bytes : undefined);
      return;
    }
    if (method === 'DELETE') {
      if (!stored) return fail(404, 'NOT_FOUND', `The file ${path} does not exist.`);
      this.files.delete(path);
      res.writeHead(204).end();
      return;
    }
    fail(405, 'BAD_REQUEST', `Method ${method} is not allowed on /fs/files`);
  }

  private onDirectory(method: string, path: string, url: URL, res: ServerResponse, fail: Fail): void {
    const exists = this.dirs.has(path);
    if (method === 'PUT') {
      // Like mkdir -p, and idempotent; a file in the way is a conflict.
      const blocked = [...ancestors(path), path].find((dir) => this.files.has(dir));
      if (blocked) return fail(409, 'ALREADY_EXISTS', `A file already exists at ${blocked}`);
      for (const dir of [...ancestors(path), path]) if (this.volumeOf(dir)) this.dirs.add(dir);
      res.writeHead(204).end();
      return;
    }
    if (!exists) return fail(404, 'NOT_FOUND', `The directory ${path} does not exist.`, [notFoundInfo]);
    if (method === 'HEAD') {
      res.writeHead(200).end();
      return;
    }
    const children = this.childrenOf(path);
    if (method === 'GET') {
      this.stats.listPages += 1;
      const asked = Number(url.searchParams.get('page_size') ?? 1000);
      const size = Math.min(asked > 0 ? asked : 1000, 1000, this.faults.pageSize ?? Infinity);
      let after = '';
      const token = url.searchParams.get('page_token');
      if (token) {
        try {
          after = String(JSON.parse(Buffer.from(token, 'base64url').toString('utf8')).after);
        } catch {
          return fail(400, 'INVALID_PARAMETER_VALUE', 'Invalid page token');
        }
      }
      const rest = children.filter((child) => child.name > after);
      const page = rest.slice(0, size);
      const more = rest.length > page.length;
      const text = JSON.stringify({
        contents: page,
        ...(more ? { next_page_token: Buffer.from(JSON.stringify({ after: page.at(-1)!.name })).toString('base64url') } : {}),
      });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
      return;
    }
    if (method === 'DELETE') {
      if (this.volumes.has(path)) return fail(400, 'INVALID_PARAMETER_VALUE', `The volume root ${path} cannot be deleted through the Files API`);
      if (children.length > 0) {
        return fail(400, 'INVALID_PARAMETER_VALUE', `The directory ${path} is not empty`, [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'FILES_API_DIRECTORY_IS_NOT_EMPTY', domain: 'filesystem.databricks.com', metadata: {} }]);
      }
      this.dirs.delete(path);
      res.writeHead(204).end();
      return;
    }
    fail(405, 'BAD_REQUEST', `Method ${method} is not allowed on /fs/directories`);
  }

  /** Entries as the API lists them, sorted by name: files with their size and time, folders without. */
  private childrenOf(dir: string): Array<{ path: string; name: string; is_directory: boolean; file_size?: number; last_modified?: number }> {
    const direct = (path: string) => path.startsWith(`${dir}/`) && !path.slice(dir.length + 1).includes('/');
    const entries = [
      ...[...this.dirs].filter(direct).map((path) => ({ path, name: path.slice(dir.length + 1), is_directory: true })),
      ...[...this.files].filter(([path]) => direct(path)).map(([path, file]) => ({
        path, name: path.slice(dir.length + 1), is_directory: false, file_size: file.bytes.length, last_modified: file.lastModified,
      })),
    ];
    return entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  private volumeOf(path: string): string | undefined {
    const volume = path.split('/').slice(0, 5).join('/');
    return this.volumes.has(volume) ? volume : undefined;
  }

  private async readBody(req: IncomingMessage): Promise<Buffer> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) {
      chunks.push(chunk as Buffer);
      this.stats.bytesIn += (chunk as Buffer).length;
    }
    const body = Buffer.concat(chunks);
    const declared = req.headers['content-length'];
    if (declared !== undefined && Number(declared) !== body.length) throw new Error('the body ended early');
    return body;
  }
}

type Fail = (status: number, code: string, message: string, details?: unknown[]) => void;

const notFoundInfo = { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'FILES_API_DIRECTORY_IS_NOT_FOUND', domain: 'filesystem.databricks.com', metadata: {} };

/** `/a/b/c` → `/a`, `/a/b`. */
function ancestors(path: string): string[] {
  const parts = path.split('/');
  return parts.slice(1, -1).map((_, i) => parts.slice(0, i + 2).join('/'));
}

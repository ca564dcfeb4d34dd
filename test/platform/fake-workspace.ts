// A fake Databricks workspace on loopback, for the real SDK and the real claude-code-router:
// OIDC discovery and the client-credentials token endpoint (checking the client id and secret),
// the token API (create, delete; recording comment and lifetime), a serving endpoint that
// checks the bearer against the tokens it handed out, and the Files API on Unity Catalog volumes
// (fake-volumes.ts).
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { FakeVolumes, type FilesFaults, type FilesStats } from './fake-volumes.ts';

export type { FilesFaults, FilesStats } from './fake-volumes.ts';

export interface CreatedToken {
  tokenId: string;
  value: string;
  comment: string | undefined;
  lifetimeSeconds: number | undefined;
  createdAt: number;
  expiresAt: number | undefined;
  deleted: boolean;
  /** When token/delete revoked it (ms since the epoch). */
  deletedAt?: number;
}

export interface ServingCall {
  endpoint: string;
  authorization: string | undefined;
  body: unknown;
}

export interface FakeWorkspace {
  url: string;
  clientId: string;
  clientSecret: string;
  tokens: CreatedToken[];
  servingCalls: ServingCall[];
  /** Requests to token/create, refused ones included. */
  readonly createAttempts: number;
  /** Makes token/create answer 403 PERMISSION_DENIED (true) or work again (false). */
  denyTokenCreate(deny: boolean): void;
  /** Makes every request fail at the socket (as an unreachable workspace would), or work again. */
  setReachable(reachable: boolean): void;
  /** Creates the Unity Catalog volume `/Volumes/<catalog>/<schema>/<volume>`; no other volume exists. */
  addVolume(path: string): void;
  /** Replaces the Files API's fault settings (`{}` clears them). */
  filesFaults(faults: FilesFaults): void;
  /** Files API requests by method, pages listed, bytes in and out, requests in flight (live). */
  readonly filesStats: FilesStats;
  resetFilesStats(): void;
  /** The volumes' files, by absolute path: read, written (to corrupt an object), listed. */
  volumeFile(path: string): Buffer | undefined;
  writeVolumeFile(path: string, bytes: Buffer): void;
  volumeFilePaths(): string[];
  /** OAuth access tokens the token endpoint handed out (to check that none leaks). */
  readonly accessTokens: string[];
  close(): Promise<void>;
}

export async function startFakeWorkspace(): Promise<FakeWorkspace> {
  const clientId = randomUUID();
  const clientSecret = randomBytes(24).toString('hex');
  const oauthTokens = new Set<string>();
  const tokens: CreatedToken[] = [];
  const servingCalls: ServingCall[] = [];
  let deny = false;
  let createAttempts = 0;
  let reachable = true;
  let url = '';
  const volumes = new FakeVolumes();

  const json = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const readBody = async (req: IncomingMessage) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  };
  const bearer = (req: IncomingMessage) => /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];

  const server: Server = createServer(async (req, res) => {
    if (!reachable) return req.socket.destroy();
    const path = (req.url ?? '').split('?')[0];
    // Files move as raw bytes, read by the Files API itself (which may cut an upload short).
    if (path.startsWith('/api/2.0/fs/')) {
      const token = bearer(req);
      if (!token || !oauthTokens.has(token)) {
        req.resume();
        return json(res, 401, { error_code: 'UNAUTHENTICATED', message: 'Credential was not sent or was of an unsupported type' });
      }
      return volumes.handle(req, res, new URL(req.url ?? '/', 'http://fake'));
    }
    const body = await readBody(req);
    if (req.method === 'GET' && path === '/oidc/.well-known/oauth-authorization-server') {
      return json(res, 200, { issuer: `${url}/oidc`, authorization_endpoint: `${url}/oidc/v1/authorize`, token_endpoint: `${url}/oidc/v1/token` });
    }
    if (req.method === 'POST' && path === '/oidc/v1/token') {
      const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      const [id, secret] = basic ? Buffer.from(basic, 'base64').toString('utf8').split(':') : [];
      const form = new URLSearchParams(body);
      const givenId = id ?? form.get('client_id');
      const givenSecret = secret ?? form.get('client_secret');
      if (givenId !== clientId || givenSecret !== clientSecret || form.get('grant_type') !== 'client_credentials') {
        return json(res, 401, { error: 'invalid_client', error_description: 'Client authentication failed' });
      }
      const accessToken = randomBytes(16).toString('hex');
      oauthTokens.add(accessToken);
      return json(res, 200, { access_token: accessToken, token_type: 'Bearer', expires_in: 3600, scope: 'all-apis' });
    }
    if (path.startsWith('/api/')) {
      const token = bearer(req);
      if (!token || !oauthTokens.has(token)) return json(res, 401, { error_code: 'UNAUTHENTICATED', message: 'Credential was not sent or was of an unsupported type' });
      if (req.method === 'POST' && path === '/api/2.0/token/create') {
        createAttempts += 1;
        if (deny) return json(res, 403, { error_code: 'PERMISSION_DENIED', message: 'User does not have permission to create tokens' });
        const request = JSON.parse(body || '{}') as { comment?: string; lifetime_seconds?: number };
        const now = Date.now();
        const created: CreatedToken = {
          tokenId: randomBytes(8).toString('hex'),
          value: `dapi${randomBytes(16).toString('hex')}`,
          comment: request.comment,
          lifetimeSeconds: request.lifetime_seconds,
          createdAt: now,
          expiresAt: request.lifetime_seconds ? now + request.lifetime_seconds * 1000 : undefined,
          deleted: false,
        };
        tokens.push(created);
        return json(res, 200, {
          token_value: created.value,
          token_info: { token_id: created.tokenId, comment: created.comment, creation_time: now, expiry_time: created.expiresAt ?? -1 },
        });
      }
      if (req.method === 'POST' && path === '/api/2.0/token/delete') {
        const { token_id: tokenId } = JSON.parse(body || '{}') as { token_id?: string };
        const found = tokens.find((t) => t.tokenId === tokenId && !t.deleted);
        if (!found) return json(res, 404, { error_code: 'RESOURCE_DOES_NOT_EXIST', message: `Token ${tokenId} does not exist` });
        found.deleted = true;
        found.deletedAt = Date.now();
        return json(res, 200, {});
      }
      return json(res, 404, { error_code: 'ENDPOINT_NOT_FOUND', message: `No API found for ${req.method} ${path}` });
    }
    const serving = /^\/serving-endpoints\/([^/]+)\/invocations$/.exec(path);
    if (req.method === 'POST' && serving) {
      const authorization = req.headers.authorization;
      let parsed: unknown = body;
      try { parsed = JSON.parse(body); } catch { /* kept as text */ }
      servingCalls.push({ endpoint: serving[1], authorization, body: parsed });
      const token = bearer(req);
      const valid = tokens.find((t) => t.value === token && !t.deleted && (t.expiresAt === undefined || t.expiresAt > Date.now()));
      if (!valid) return json(res, 401, { error_code: 'UNAUTHENTICATED', message: 'Invalid access token' });
      // An OpenAI-style chat completion, which is what claude-code-router's default transformer expects.
      return json(res, 200, {
        id: `chatcmpl-${randomBytes(6).toString('hex')}`,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: serving[1],
        choices: [{ index: 0, message: { role: 'assistant', content: 'hello from the fake endpoint' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 3, completion_tokens: 5, total_tokens: 8 },
      });
    }
    json(res, 404, { error_code: 'NOT_FOUND', message: `no route for ${req.method} ${path}` });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url, clientId, clientSecret, tokens, servingCalls,
    get createAttempts() {
      return createAttempts;
    },
    denyTokenCreate: (value) => { deny = value; },
    setReachable: (value) => { reachable = value; },
    addVolume: (path) => volumes.addVolume(path),
    filesFaults: (faults) => volumes.setFaults(faults),
    filesStats: volumes.stats,
    resetFilesStats: () => volumes.resetStats(),
    volumeFile: (path) => volumes.file(path),
    writeVolumeFile: (path, bytes) => volumes.writeFile(path, bytes),
    volumeFilePaths: () => volumes.filePaths(),
    get accessTokens() {
      return [...oauthTokens];
    },
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

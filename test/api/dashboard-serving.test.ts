// The dashboard's files served by the running service: cache headers, content types, gzip and
// brotli chosen by Accept-Encoding, ETag and 304, HEAD, no way out of dist/web/, and a page that
// says what to do while the dashboard is not built.
import { execFileSync } from 'node:child_process';
import { existsSync, promises as fs, readdirSync, readFileSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/api/app.ts';
import { dashboardRouter } from '../../src/api/dashboard.ts';
import { rawRequest } from '../helpers/raw-http.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const WEB = join(ROOT, 'dist/web');

let service: TestService;
let js: string;
let css: string;

beforeAll(async () => {
  // npm test builds it first (pretest); a lone vitest run may not have.
  if (!existsSync(join(WEB, 'index.html'))) execFileSync('npm', ['run', 'build:web', '--silent'], { cwd: ROOT, stdio: 'ignore' });
  const assets = readdirSync(join(WEB, 'assets'));
  js = assets.find((name) => name.endsWith('.js'))!;
  css = assets.find((name) => name.endsWith('.css'))!;
  service = await startTestService();
}, 120_000);

afterAll(async () => {
  await service?.stop();
});

/** A request with Node's own http client, which neither decompresses nor adds Accept-Encoding. */
function get(path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<{ status: number; headers: Headers; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(service.url + path, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const all = new Headers();
        for (const [name, value] of Object.entries(res.headers)) if (value !== undefined) all.set(name, String(value));
        resolve({ status: res.statusCode!, headers: all, body: Buffer.concat(chunks) });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the dashboard at /', () => {
  it('serves index.html at / and /index.html, checked before each use', async () => {
    const file = readFileSync(join(WEB, 'index.html'));
    for (const path of ['/', '/index.html']) {
      const res = await get(path);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(res.headers.get('cache-control')).toBe('no-cache');
      expect(res.headers.get('vary')).toBe('Accept-Encoding');
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      // Only its own origin: no CDN, no script or connection elsewhere (the browser tests check it holds).
      const policy = res.headers.get('content-security-policy') ?? '';
      expect(policy).toContain("default-src 'self'");
      expect(policy).toContain("connect-src 'self'");
      expect(policy).not.toMatch(/script-src|unsafe-eval|\*/);
      expect(res.body.equals(file)).toBe(true);
      expect(res.body.toString()).toContain('<title>devbox-controller</title>');
      // Relative asset URLs: the page works under any path prefix.
      expect(res.body.toString()).toMatch(/src="\.\/assets\/[^"]+\.js"/);
    }
  });

  it('answers 304 to a matching If-None-Match, with the ETag of the encoding asked for', async () => {
    const plain = await get('/');
    const etag = plain.headers.get('etag')!;
    expect(etag).toMatch(/^"[^"]+"$/);
    const again = await get('/', { 'if-none-match': etag });
    expect(again.status).toBe(304);
    expect(again.body.length).toBe(0);
    const gz = await get('/', { 'accept-encoding': 'gzip' });
    expect(gz.headers.get('etag')).not.toBe(etag);
    expect((await get('/', { 'accept-encoding': 'gzip', 'if-none-match': gz.headers.get('etag')! })).status).toBe(304);
    // A stale tag gets the page.
    expect((await get('/', { 'if-none-match': '"stale"' })).status).toBe(200);
  });

  it('serves hashed assets as immutable, with their content types', async () => {
    for (const [name, type] of [[js, 'text/javascript; charset=utf-8'], [css, 'text/css; charset=utf-8']]) {
      const res = await get(`/assets/${name}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(type);
      expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      expect(res.headers.get('content-length')).toBe(String(res.body.length));
      expect(res.body.equals(readFileSync(join(WEB, 'assets', name)))).toBe(true);
    }
  });

  it('sends gzip or brotli as Accept-Encoding allows, each decompressing to the file', async () => {
    const file = readFileSync(join(WEB, 'assets', js));
    const gz = await get(`/assets/${js}`, { 'accept-encoding': 'gzip, deflate' });
    expect(gz.headers.get('content-encoding')).toBe('gzip');
    expect(gz.headers.get('vary')).toBe('Accept-Encoding');
    expect(gz.body.length).toBeLessThan(file.length);
    expect(gunzipSync(gz.body).equals(file)).toBe(true);

    const br = await get(`/assets/${js}`, { 'accept-encoding': 'gzip, deflate, br' });
    expect(br.headers.get('content-encoding')).toBe('br');
    expect(brotliDecompressSync(br.body).equals(file)).toBe(true);
    expect(br.body.length).toBeLessThanOrEqual(gz.body.length);

    // br refused by q=0: gzip; nothing accepted: the file as is.
    expect((await get(`/assets/${js}`, { 'accept-encoding': 'br;q=0, gzip' })).headers.get('content-encoding')).toBe('gzip');
    const plain = await get(`/assets/${js}`, { 'accept-encoding': 'identity' });
    expect(plain.headers.get('content-encoding')).toBeNull();
    expect(plain.body.equals(file)).toBe(true);

    const page = await get('/', { 'accept-encoding': 'br' });
    expect(brotliDecompressSync(page.body).equals(readFileSync(join(WEB, 'index.html')))).toBe(true);
  });

  it('answers HEAD with the headers and no body', async () => {
    const res = await get(`/assets/${js}`, { 'accept-encoding': 'gzip' }, 'HEAD');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-encoding')).toBe('gzip');
    expect(Number(res.headers.get('content-length'))).toBeGreaterThan(0);
    expect(res.body.length).toBe(0);
    expect((await get('/', {}, 'HEAD')).status).toBe(200);
  });

  it('answers an unknown asset, or any path out of the folder, 404 in the error envelope', async () => {
    const missing = await get('/assets/nope-1234.js');
    expect(missing.status).toBe(404);
    expect(JSON.parse(missing.body.toString())).toMatchObject({ status: 'error', error: { code: 'NOT_FOUND' } });
    // Sent as is on the wire: no client normalises these paths first.
    for (const path of [
      '/assets/../../package.json', '/assets/..%2f..%2fpackage.json', '/assets/%2e%2e/%2e%2e/package.json',
      '/assets/..%5c..%5cpackage.json', '/assets/', '/assets', '/assets/.', '/assets//etc/passwd', '/../package.json',
      '/index.html/../../package.json', '/assets/%00.js',
    ]) {
      const res = await rawRequest(service.port, `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${service.port}\r\nConnection: close\r\n\r\n`);
      expect(res.status, path).toBe(404);
      expect(res.text, path).not.toContain('"version"');
      expect(res.body, path).toMatchObject({ status: 'error' });
    }
  });

  it('is behind the same host check as the API', async () => {
    const res = await rawRequest(service.port, `GET / HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n`);
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ error: { code: 'HOST_NOT_ALLOWED' } });
  });
});

describe('before the dashboard is built', () => {
  let server: Server;
  let base: string;
  let dir: string;

  beforeAll(async () => {
    dir = await fs.mkdtemp(join(tmpdir(), 'devbox-web-'));
    const app = createApp({ routers: [dashboardRouter({ dir: join(dir, 'web') })], log: () => undefined });
    server = createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('answers / with a page that says to run npm run build, then the page once it exists', async () => {
    const res = await fetch(`${base}/`);
    expect(res.status).toBe(503);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(await res.text()).toContain('npm run build');
    expect((await fetch(`${base}/assets/index-abc.js`)).status).toBe(404);

    // Built while the service runs: served at once, no restart.
    await fs.mkdir(join(dir, 'web/assets'), { recursive: true });
    await fs.writeFile(join(dir, 'web/index.html'), '<!doctype html><title>built</title>');
    await fs.writeFile(join(dir, 'web/assets/index-abc.js'), 'console.log(1)');
    const built = await fetch(`${base}/`);
    expect(built.status).toBe(200);
    expect(await built.text()).toContain('built');
    expect((await fetch(`${base}/assets/index-abc.js`)).status).toBe(200);
  });
});

// The dashboard's files (dist/web/, built by vite): index.html at `/`, never cached without a
// check; hashed files under /assets/ cached for a year. Each file is read once and kept in memory
// with its gzip and brotli forms, made on first request and remade when the file changes on disk.
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { extname, join } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { Router, type Request, type Response } from 'express';
import { apiError } from '../core/error-catalogue.ts';
import { projectFile } from '../core/project.ts';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.webp': 'image/webp',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

/** Kinds worth compressing (images and fonts already are). */
const COMPRESSIBLE = new Set(['.html', '.js', '.mjs', '.css', '.json', '.map', '.svg', '.txt']);

/** An asset's name: hashed file names vite writes, nothing that could leave the folder. */
const ASSET_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

const INDEX_CACHE = 'no-cache';
/**
 * The page may load and connect to its own origin only (the API, the watch and log streams,
 * same-origin thumbnails): nothing from a CDN, nothing a template's URL could pull in; inline
 * style attributes only (the views set widths). Editors are opened in their own tabs, so the
 * page needs no frames, and no other site may frame it.
 */
const PAGE_POLICY = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; connect-src 'self'; "
  + "object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'self'";
const ASSET_CACHE = 'public, max-age=31536000, immutable';

interface Variant {
  body: Buffer;
  etag: string;
}

interface CachedFile {
  mtimeMs: number;
  size: number;
  type: string;
  identity: Variant;
  gzip?: Variant;
  br?: Variant;
}

export interface DashboardOptions {
  /** The built dashboard (default: the project's dist/web/). */
  dir?: string;
}

/** The page shown at `/` before the dashboard has been built. */
const NOT_BUILT = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark"><title>devbox-controller</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 3rem auto; padding: 0 1rem; line-height: 1.5">
<h1>The dashboard has not been built</h1>
<p>This service's API works, but the web dashboard's files (<code>dist/web/</code>) are missing.
Run <code>npm run build</code> in the project folder (or start the service with <code>npm start</code>,
which builds it), then reload this page.</p>
<p>Meanwhile the REST API answers here, for example <a href="servers">servers</a> and <a href="health">health</a>.</p>
</body></html>
`;

export function dashboardRouter(options: DashboardOptions = {}): Router {
  const dir = options.dir ?? projectFile('dist/web');
  const cache = new Map<string, CachedFile>();

  /** The file, from memory while it is unchanged on disk; undefined when there is none. */
  async function load(path: string): Promise<CachedFile | undefined> {
    let stat;
    try {
      stat = await fs.stat(path);
    } catch {
      cache.delete(path);
      return undefined;
    }
    if (!stat.isFile()) return undefined;
    const known = cache.get(path);
    if (known && known.mtimeMs === stat.mtimeMs && known.size === stat.size) return known;
    const body = await fs.readFile(path);
    const ext = extname(path).toLowerCase();
    const hash = createHash('sha256').update(body).digest('base64url').slice(0, 22);
    const file: CachedFile = {
      mtimeMs: stat.mtimeMs,
      size: stat.size,
      type: TYPES[ext] ?? 'application/octet-stream',
      identity: { body, etag: `"${hash}"` },
    };
    if (COMPRESSIBLE.has(ext) && body.length > 256) {
      file.gzip = { body: gzipSync(body, { level: 9 }), etag: `"${hash}-gz"` };
      file.br = {
        body: brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: body.length } }),
        etag: `"${hash}-br"`,
      };
    }
    cache.set(path, file);
    return file;
  }

  function send(req: Request, res: Response, file: CachedFile, cacheControl: string): void {
    const [encoding, variant] = pickEncoding(req.headers['accept-encoding'], file);
    res.setHeader('Content-Type', file.type);
    res.setHeader('Cache-Control', cacheControl);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    if (file.type.startsWith('text/html')) {
      res.setHeader('Content-Security-Policy', PAGE_POLICY);
      res.setHeader('Referrer-Policy', 'same-origin');
    }
    res.setHeader('ETag', variant.etag);
    if (file.gzip) res.setHeader('Vary', 'Accept-Encoding');
    if (encoding) res.setHeader('Content-Encoding', encoding);
    if (matches(req.headers['if-none-match'], variant.etag)) {
      res.status(304).end();
      return;
    }
    res.setHeader('Content-Length', variant.body.length);
    res.status(200);
    if (req.method === 'HEAD') res.end();
    else res.end(variant.body);
  }

  const router = Router();
  router.get(['/', '/index.html'], async (req, res) => {
    const file = await load(join(dir, 'index.html'));
    if (!file) {
      res.status(503).setHeader('Cache-Control', 'no-store');
      res.type('html').send(NOT_BUILT);
      return;
    }
    send(req, res, file, INDEX_CACHE);
  });
  // express 5 runs GET routes for HEAD too; the path is matched by hand so that nothing in it
  // (encoded slashes, dots) can name a file outside assets/.
  router.use('/assets', async (req, res, next) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    const name = req.path.slice(1);
    const file = ASSET_NAME.test(name) && !name.includes('..') ? await load(join(dir, 'assets', name)) : undefined;
    if (!file) {
      next(apiError('NOT_FOUND', `the dashboard has no file ${JSON.stringify(`assets/${name}`)}: reload the page (\`/\`) to get the current build's files`));
      return;
    }
    send(req, res, file, ASSET_CACHE);
  });
  return router;
}

/** The smallest form the client accepts: brotli, then gzip, else the file as is. */
function pickEncoding(header: string | string[] | undefined, file: CachedFile): ['br' | 'gzip' | undefined, Variant] {
  const accepted = acceptedEncodings(Array.isArray(header) ? header.join(',') : header ?? '');
  if (file.br && accepted.has('br')) return ['br', file.br];
  if (file.gzip && accepted.has('gzip')) return ['gzip', file.gzip];
  return [undefined, file.identity];
}

/** Encodings with a q above 0 (a `*` counts for both). */
function acceptedEncodings(header: string): Set<string> {
  const accepted = new Set<string>();
  const refused = new Set<string>();
  for (const part of header.split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';');
    if (!name) continue;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const zero = q !== undefined && Number(q.slice(2)) === 0;
    (zero ? refused : accepted).add(name.trim());
  }
  if (accepted.has('*')) for (const name of ['br', 'gzip']) if (!refused.has(name)) accepted.add(name);
  for (const name of refused) accepted.delete(name);
  return accepted;
}

function matches(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header.split(',').some((tag) => {
    const t = tag.trim();
    return t === '*' || t === etag || t === `W/${etag}`;
  });
}

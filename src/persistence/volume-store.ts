// The Unity Catalog volume target: a SnapshotStore that keeps each object as one file in a volume,
// through the Databricks SDK's Files API, signed in as the app's service principal.
import type { ApiClient, Context, WorkspaceClient } from '@databricks/sdk-experimental';
import { volumeOf, type VolumeTarget } from '../config/persist-target.ts';
import type { PlatformSettings } from '../config/settings.ts';
import { workspaceUrl } from '../config/workspace-url.ts';
import { backoffMs } from '../core/backoff.ts';
import type { PutOptions, SnapshotStore, StoreError } from './types.ts';
import { RequestTimeout, statusOf, storeErrorOf, type Operation } from './volume-errors.ts';

/** What the store uses of a WorkspaceClient (the real one, pointed at a workspace or at the test fake). */
export type FilesClient = Pick<WorkspaceClient, 'files' | 'apiClient'>;

export interface RetryOptions {
  /** Tries per request, the first included (default 5). */
  attempts?: number;
  /** First and longest wait between tries (default 200 ms and 2 s): doubled each time, with jitter. */
  initialMs?: number;
  maxMs?: number;
  /** How a wait is taken (tests pass one that does not sleep). Rejects when `signal` aborts. */
  delay?: (ms: number, signal?: AbortSignal) => Promise<void>;
  random?: () => number;
}

export interface VolumeStoreOptions {
  client: FilesClient;
  /** `/Volumes/<catalog>/<schema>/<volume>[/<prefix>]`: keys live below it. */
  target: VolumeTarget;
  log?: (message: string) => void;
  retry?: RetryOptions;
  /** One request's bound, its body included (default 30 s); one that exceeds it counts as transient. */
  requestTimeoutMs?: number;
  /** Directories listed at once while walking (default 4; the Files API allows about 10 requests in flight). */
  listConcurrency?: number;
  /** Values masked wherever a message could carry one (the client secret). */
  secrets?: string[];
}

const KEY = /^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/;
const SEGMENT = /^[A-Za-z0-9._-]+$/;
/** How long a volume seen to exist is trusted before a 404 makes the store look again. */
const VOLUME_SEEN_MS = 60_000;

// Loaded on first use (about 0.4 s and 45 MB), as the token API does: only a volume target pays for it.
const sdk = () => import('@databricks/sdk-experimental');

/** A 404 the operation expects (no such object), told apart from a failure. */
const ABSENT = Symbol('absent');

export class VolumeStore implements SnapshotStore {
  readonly description: string;
  readonly root: string;
  /** The volume itself: `/Volumes/<catalog>/<schema>/<volume>`. */
  readonly volume: string;
  private readonly client: FilesClient;
  private readonly log: (message: string) => void;
  private readonly attempts: number;
  private readonly initialMs: number;
  private readonly maxMs: number;
  private readonly delay: (ms: number, signal?: AbortSignal) => Promise<void>;
  private readonly random: () => number;
  private readonly requestTimeoutMs: number;
  private readonly listConcurrency: number;
  private readonly secrets: string[];
  private volumeSeenAt = -Infinity;

  constructor(options: VolumeStoreOptions) {
    this.root = options.target.path;
    this.volume = volumeOf(this.root);
    this.description = `volume ${this.root}`;
    this.client = options.client;
    this.log = options.log ?? (() => {});
    this.attempts = Math.max(1, options.retry?.attempts ?? 5);
    this.initialMs = options.retry?.initialMs ?? 200;
    this.maxMs = options.retry?.maxMs ?? 2000;
    this.delay = options.retry?.delay ?? sleep;
    this.random = options.retry?.random ?? Math.random;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
    this.listConcurrency = Math.max(1, options.listConcurrency ?? 4);
    this.secrets = (options.secrets ?? []).filter((secret) => secret.length >= 4);
  }

  /**
   * One PUT with overwrite. The Files API replaces a file whole: a reader sees the old object or
   * the new one, and an upload cut off before its last byte (the length is declared) leaves the old
   * one. It also creates missing parent directories (the Databricks CLI checks for a parent only
   * when told not to create it), so no createDirectory call is needed first.
   */
  async put(key: string, body: Buffer, signal?: AbortSignal, options?: PutOptions): Promise<void> {
    const path = this.pathOf(key);
    // One request is the whole put: nothing to prepare before what it must follow.
    await options?.after;
    const { ReadableStream } = await sdk();
    await this.withRetries(`uploading ${key}`, (context) => {
      // The SDK's files.upload (0.17) sends no body at all, so the request is made through its
      // ApiClient, which signs it the same way; a new stream per try, as a used one cannot be re-read.
      const payload = new ReadableStream({
        start(controller) {
          if (body.length > 0) controller.enqueue(new Uint8Array(body.buffer, body.byteOffset, body.length));
          controller.close();
        },
      });
      return this.request({
        path: `/api/2.0/fs/files${path}`,
        method: 'PUT',
        headers: new Headers({ 'Content-Type': 'application/octet-stream', 'Content-Length': String(body.length) }),
        query: { overwrite: 'true' },
        raw: false,
        payload,
      }, context);
    }, signal, 'put');
  }

  async get(key: string, signal?: AbortSignal): Promise<Buffer | undefined> {
    const path = this.pathOf(key);
    const found = await this.withRetries(`downloading ${key}`, async (context) => {
      try {
        const answer = await this.client.files.download({ file_path: path }, context);
        const bytes = await readAll(answer.contents);
        const declared = Number(answer['content-length']);
        if (Number.isFinite(declared) && declared !== bytes.length) {
          throw Object.assign(new Error(`the download ended after ${bytes.length} of ${declared} bytes`), { code: 'ECONNRESET' });
        }
        return bytes;
      } catch (error) {
        if (statusOf(error) === 404) return ABSENT;
        throw error;
      }
    }, signal, 'get');
    if (found !== ABSENT) return found;
    await this.checkVolume(signal);
    return undefined;
  }

  /** Walks the folders below the prefix's folder, each listed page by page, a few folders at a time. */
  async list(prefix: string, signal?: AbortSignal): Promise<string[]> {
    if (prefix !== '' && !/^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]*)*$/.test(prefix)) throw new Error(`"${prefix}" is not a key prefix`);
    const start = prefix.slice(0, prefix.lastIndexOf('/') + 1).replace(/\/$/, '');
    const wanted = (dir: string) => (`${dir}/`).startsWith(prefix) || prefix.startsWith(`${dir}/`) || dir === '';
    const keys: string[] = [];
    const walk = new AbortController();
    const onAbort = () => walk.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const queue = [start];
      let running = 0;
      await new Promise<void>((resolve, reject) => {
        const next = () => {
          if (walk.signal.aborted) return;
          if (queue.length === 0 && running === 0) return resolve();
          while (running < this.listConcurrency && queue.length > 0) {
            const dir = queue.shift()!;
            running += 1;
            this.listDirectory(dir, dir === start, walk.signal).then((entries) => {
              running -= 1;
              for (const entry of entries) {
                if (entry.directory) {
                  if (wanted(entry.key)) queue.push(entry.key);
                } else if (entry.key.startsWith(prefix)) {
                  keys.push(entry.key);
                }
              }
              next();
            }, (error: unknown) => {
              walk.abort(error);
              reject(error);
            });
          }
        };
        next();
      });
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
    return keys;
  }

  async delete(key: string, signal?: AbortSignal): Promise<void> {
    const path = this.pathOf(key);
    await this.withRetries(`deleting ${key}`, async (context) => {
      try {
        await this.client.files.delete({ file_path: path }, context);
      } catch (error) {
        // Already gone, or removed by a try whose answer was lost.
        if (statusOf(error) !== 404) throw error;
      }
    }, signal, 'delete');
  }

  /** The entries of one folder below the root (`''`: the root), as keys; every page token followed. */
  private async listDirectory(dir: string, first: boolean, signal: AbortSignal): Promise<Array<{ key: string; directory: boolean }>> {
    const path = dir === '' ? this.root : `${this.root}/${dir}`;
    const entries: Array<{ key: string; directory: boolean }> = [];
    let token: string | undefined;
    do {
      // Page by page rather than through files.listDirectoryContents, which stops at the first
      // empty page although the API may answer one with a next_page_token. Each page is retried
      // on its own, so a failure resumes where it happened.
      const page = await this.withRetries(`listing ${dir === '' ? 'the root' : dir}`, async (context) => {
        try {
          return await this.request({
            path: `/api/2.0/fs/directories${path}`,
            method: 'GET',
            headers: new Headers({ Accept: 'application/json' }),
            query: token ? { page_token: token } : {},
            raw: false,
          }, context) as { contents?: Array<{ name?: string; path?: string; is_directory?: boolean }>; next_page_token?: string };
        } catch (error) {
          if (statusOf(error) === 404) return ABSENT;
          throw error;
        }
      }, signal, 'list');
      if (page === ABSENT) {
        // The folder does not exist (yet): no keys, once the volume itself is known to be there.
        if (first) await this.checkVolume(signal);
        return [];
      }
      for (const entry of page.contents ?? []) {
        const name = entry.name ?? entry.path?.split('/').pop() ?? '';
        // Files a person put in the volume by hand, with names no key can have, are not the store's.
        if (!SEGMENT.test(name) || name === '.' || name === '..') continue;
        entries.push({ key: dir === '' ? name : `${dir}/${name}`, directory: entry.is_directory === true });
      }
      token = page.next_page_token || undefined;
    } while (token);
    return entries;
  }

  /** After a 404 on something that may simply not exist yet: is the volume there at all? */
  private async checkVolume(signal?: AbortSignal): Promise<void> {
    if (Date.now() - this.volumeSeenAt < VOLUME_SEEN_MS) return;
    await this.withRetries('looking up the volume', (context) => this.client.files.getDirectoryMetadata({ directory_path: this.volume }, context), signal, 'volume');
  }

  private request(options: Parameters<ApiClient['request']>[0], context: Context): Promise<unknown> {
    return this.client.apiClient.request(options, context);
  }

  private pathOf(key: string): string {
    if (!KEY.test(key) || key.split('/').some((segment) => segment === '.' || segment === '..')) {
      throw new Error(`"${key}" is not a store key (segments of A-Z a-z 0-9 . _ - joined by /)`);
    }
    return `${this.root}/${key}`;
  }

  /**
   * Runs one request, trying again after transient and connection failures with exponential
   * backoff and jitter; a refusal or a missing volume is final. An abort ends it at once with the
   * signal's reason.
   */
  private async withRetries<T>(what: string, run: (context: Context) => Promise<T>, signal: AbortSignal | undefined, op: Operation): Promise<T> {
    for (let attempt = 1; ; attempt += 1) {
      signal?.throwIfAborted();
      try {
        const result = await this.once(run, signal);
        if (result !== ABSENT) this.volumeSeenAt = Date.now();
        return result;
      } catch (error) {
        if (signal?.aborted) throw signal.reason;
        const failure = this.storeError(error, what, op);
        if ((failure.failure !== 'transient' && failure.failure !== 'unreachable') || attempt >= this.attempts) throw failure;
        const wait = Math.round(backoffMs(attempt, { initialMs: this.initialMs, maxMs: this.maxMs, jitter: this.random }));
        this.log(`${failure.message}; trying again in ${(wait / 1000).toFixed(1)} s (${attempt + 1} of ${this.attempts})`);
        await this.delay(wait, signal);
      }
    }
  }

  /** One try, bounded in time and cancelled (the SDK's own way, through its Context) on abort or timeout. */
  private async once<T>(run: (context: Context) => Promise<T>, signal?: AbortSignal): Promise<T> {
    const { Context } = await sdk();
    const listeners: Array<() => void> = [];
    let cancelled = false;
    const cancel = () => {
      cancelled = true;
      for (const listener of listeners.splice(0)) listener();
    };
    const context = new Context({
      cancellationToken: {
        get isCancellationRequested() {
          return cancelled;
        },
        onCancellationRequested: (listener: () => void) => {
          listeners.push(listener);
        },
      },
    });
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const stopped = new Promise<never>((_, reject) => {
      // Settled before the SDK is told to cancel, so its own AbortError never stands for the cause.
      timer = setTimeout(() => {
        reject(new RequestTimeout(`no answer within ${Math.round(this.requestTimeoutMs / 100) / 10} s`));
        cancel();
      }, this.requestTimeoutMs);
      onAbort = () => {
        reject(signal!.reason);
        cancel();
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    });
    try {
      return await Promise.race([run(context), stopped]);
    } finally {
      clearTimeout(timer);
      if (onAbort) signal?.removeEventListener('abort', onAbort);
    }
  }

  /** A failure as a StoreError that says what to do; secrets masked. */
  private storeError(error: unknown, what: string, op: Operation): StoreError {
    return storeErrorOf(error, { description: this.description, what, op, volume: this.volume, secrets: this.secrets });
  }
}

/** A download's body (the SDK's ReadableStream, async iterable) as one Buffer. */
async function readAll(contents: unknown): Promise<Buffer> {
  if (!contents) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  for await (const chunk of contents as AsyncIterable<Uint8Array>) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks);
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export interface CreateVolumeStoreOptions {
  /** The persistence target, a volume. */
  target: VolumeTarget;
  /** The service principal (DATABRICKS_HOST, _CLIENT_ID, _CLIENT_SECRET), when no client is given. */
  platform?: Pick<PlatformSettings, 'host' | 'clientId' | 'clientSecret'> & Partial<Pick<PlatformSettings, 'callTimeoutMs'>>;
  client?: FilesClient;
  log?: (message: string) => void;
  retry?: RetryOptions;
  requestTimeoutMs?: number;
  listConcurrency?: number;
}

/**
 * A VolumeStore signed in as the app's service principal (OAuth machine-to-machine, as the access
 * token is), or on a given client. Only what is given is used: not the environment, not
 * ~/.databrickscfg (which this service writes).
 */
export async function createVolumeStore(options: CreateVolumeStoreOptions): Promise<VolumeStore> {
  const { target } = options;
  const requestTimeoutMs = options.requestTimeoutMs ?? options.platform?.callTimeoutMs ?? 30_000;
  let client = options.client;
  const secrets: string[] = [];
  if (!client) {
    const { host, clientId, clientSecret } = options.platform ?? {};
    const missing = Object.entries({ DATABRICKS_HOST: host, DATABRICKS_CLIENT_ID: clientId, DATABRICKS_CLIENT_SECRET: clientSecret })
      .filter(([, value]) => !value).map(([name]) => name);
    if (missing.length > 0) {
      throw new Error(`the volume target ${target.path} needs the app's service principal, but ${missing.join(', ')} ${missing.length === 1 ? 'is' : 'are'} not set: deploy as a Databricks app (which sets them) or set them`);
    }
    secrets.push(clientSecret!);
    client = new (await sdk()).WorkspaceClient({
      host: workspaceUrl(host!),
      clientId,
      clientSecret,
      authType: 'oauth-m2m',
      loaders: [],
      httpTimeoutSeconds: Math.max(1, Math.ceil(requestTimeoutMs / 1000)),
      // The store retries by itself, with a fresh body each time; the SDK's own retry loop (for 429)
      // would resend a used upload stream, so its bound is made as short as it can be.
      retryTimeoutSeconds: 0.001,
    });
  }
  return new VolumeStore({
    client, target, log: options.log, retry: options.retry, requestTimeoutMs,
    listConcurrency: options.listConcurrency, secrets,
  });
}

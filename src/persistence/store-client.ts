// The engine's one way to its store: every request passes one Limiter (at most `concurrency` in
// flight across all servers, so a shutdown snapshotting every server does not flood the volume),
// and a transient failure (5xx, dropped connection) is tried again after a short pause.
import { Limiter } from './limit.ts';
import { StoreError, type PutOptions, type SnapshotStore } from './types.ts';

export interface StoreClientOptions {
  concurrency: number;
  /** Bytes of uploads accepted and not yet stored, across all snapshots: bounds memory when the store is slow. */
  uploadBudgetBytes: number;
  /** Pauses before each retry of a transient failure; its length is the number of retries. */
  retryDelaysMs: readonly number[];
  log: (message: string) => void;
}

export class StoreClient {
  readonly store: SnapshotStore;
  private readonly limiter: Limiter;
  private readonly options: StoreClientOptions;
  private reservedBytes = 0;
  private readonly waitingForBytes: Array<{ bytes: number; resume: () => void }> = [];

  constructor(store: SnapshotStore, options: StoreClientOptions) {
    this.store = store;
    this.options = options;
    this.limiter = new Limiter(options.concurrency);
  }

  get concurrency(): number {
    return this.options.concurrency;
  }

  /**
   * With `options.after` (an index waiting for its objects) the put takes no slot of the limiter:
   * waiting in one could starve the very objects it waits for (a shutdown snapshotting every
   * server at once); it is one request per snapshot. When `after` rejects, the put fails at once
   * with its reason, never retried.
   */
  put(key: string, body: Buffer, signal?: AbortSignal, options?: PutOptions): Promise<void> {
    if (!options?.after) return this.call(`put ${key}`, () => this.store.put(key, body, signal, options), signal);
    let waitFailed = false;
    const after = options.after.catch((error: unknown) => {
      waitFailed = true;
      throw error;
    });
    after.catch(() => undefined);
    return this.call(`put ${key}`, () => this.store.put(key, body, signal, { ...options, after }), signal, { unlimited: true, stop: () => waitFailed });
  }

  /** Makes the batched puts that have returned durable (see SnapshotStore.flush). */
  async flush(signal?: AbortSignal): Promise<void> {
    if (this.store.flush) await this.call('flush', () => this.store.flush!(signal), signal);
  }

  get(key: string, signal?: AbortSignal): Promise<Buffer | undefined> {
    return this.call(`get ${key}`, () => this.store.get(key, signal), signal);
  }

  list(prefix: string, signal?: AbortSignal): Promise<string[]> {
    return this.call(`list ${prefix}`, () => this.store.list(prefix, signal), signal);
  }

  delete(key: string, signal?: AbortSignal): Promise<void> {
    return this.call(`delete ${key}`, () => this.store.delete(key, signal), signal);
  }

  /** Waits until `bytes` more fit the upload budget (a body larger than the whole budget waits for an empty one). */
  async reserve(bytes: number): Promise<void> {
    if (this.fits(bytes) && this.waitingForBytes.length === 0) {
      this.reservedBytes += bytes;
      return;
    }
    await new Promise<void>((resume) => this.waitingForBytes.push({ bytes, resume }));
  }

  release(bytes: number): void {
    this.reservedBytes -= bytes;
    while (this.waitingForBytes.length > 0 && this.fits(this.waitingForBytes[0].bytes)) {
      const next = this.waitingForBytes.shift()!;
      this.reservedBytes += next.bytes;
      next.resume();
    }
  }

  private fits(bytes: number): boolean {
    return this.reservedBytes === 0 || this.reservedBytes + bytes <= this.options.uploadBudgetBytes;
  }

  private async call<T>(what: string, request: () => Promise<T>, signal?: AbortSignal, how?: { unlimited?: boolean; stop?: () => boolean }): Promise<T> {
    const delays = this.options.retryDelaysMs;
    for (let attempt = 0; ; attempt++) {
      signal?.throwIfAborted();
      try {
        return await (how?.unlimited ? request() : this.limiter.run(request));
      } catch (error) {
        const retryable = error instanceof StoreError && (error.failure === 'transient' || error.failure === 'unreachable');
        if (!retryable || attempt >= delays.length || signal?.aborted || how?.stop?.()) throw error;
        this.options.log(`${this.store.description}: ${what} failed (${error.message}), trying again`);
        await pause(delays[attempt], signal);
      }
    }
  }
}

/**
 * Uploads of one snapshot: `upload` returns once the body is accepted (within the client's
 * upload budget, so reading files cannot run ahead of a slow store and fill memory), `finish`
 * waits for all and throws the first failure.
 */
export class Uploads {
  private readonly client: StoreClient;
  private readonly signal?: AbortSignal;
  private readonly pending = new Set<Promise<void>>();
  private failure: { error: unknown } | undefined;
  uploadedBytes = 0;
  /** Bytes handed to `upload`: all of them are stored once `finish` resolves. */
  submittedBytes = 0;

  constructor(client: StoreClient, signal?: AbortSignal) {
    this.client = client;
    this.signal = signal;
  }

  async upload(key: string, body: Buffer): Promise<void> {
    this.throwIfFailed();
    this.submittedBytes += body.length;
    await this.client.reserve(body.length);
    try {
      this.throwIfFailed();
    } catch (error) {
      this.client.release(body.length);
      throw error;
    }
    const done: Promise<void> = this.client.put(key, body, this.signal, { batch: true }).then(
      () => {
        this.uploadedBytes += body.length;
      },
      (error) => {
        this.failure ??= { error };
      },
    ).finally(() => {
      this.client.release(body.length);
      this.pending.delete(done);
    });
    this.pending.add(done);
  }

  private throwIfFailed(): void {
    if (this.failure) throw this.failure.error;
  }

  /** Waits for every upload, then makes them durable (before an index may refer to them). */
  async finish(): Promise<void> {
    await Promise.all(this.pending);
    if (this.failure) throw this.failure.error;
    if (this.uploadedBytes > 0) await this.client.flush(this.signal);
  }
}

function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

// The controller's own list-then-watch loop over one kind of Kubernetes object, in the manner of
// client-go's reflector. The JavaScript client's informer stops for good on any error but a 410
// (a killed API server ends its watch with "terminated"), so a controller cannot rely on it. This
// loop never stops until it is closed:
//   - list, remember the list's resourceVersion, and tell the cache the whole set (replace);
//   - watch from that version; ADDED, MODIFIED and DELETED update the cache, BOOKMARK only moves
//     the version (asked for with allowWatchBookmarks, so a quiet watch still has a fresh one);
//   - a watch that ends normally (the server's timeout) is opened again from the last version;
//   - 410 Gone ("too old resource version", at connect or as an ERROR event mid-stream) lists again;
//   - any other failure waits (capped, jittered backoff) and starts over from a list;
//   - every `relistMs` it lists again whatever happened, so a missed event cannot last.
// The transport is given (`list`, `watch`): the Kubernetes client in the service, a fake in tests.
import { backoffMs } from '../../core/backoff.ts';
import { realClock, type Clock } from '../../core/clock.ts';

/** The least of an object this loop needs: its name and its version. */
export interface ObjectMeta {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
}

export interface ListResult<T> {
  items: T[];
  resourceVersion: string;
}

export type WatchEvent<T> =
  | { type: 'ADDED' | 'MODIFIED' | 'DELETED'; object: T }
  | { type: 'BOOKMARK'; object: ObjectMeta }
  | { type: 'ERROR'; object: { code?: number; reason?: string; message?: string } };

/** A failure the transport reports; `status` is the HTTP status when there was one (410: too old). */
export class WatchFailure extends Error {
  readonly status: number | undefined;
  constructor(message: string, status?: number) {
    super(message);
    this.status = status;
  }
}

export interface ListWatchTransport<T> {
  list(signal: AbortSignal): Promise<ListResult<T>>;
  /** Calls onEvent for each event until the watch ends (resolves) or fails (rejects); aborting the signal ends it. */
  watch(resourceVersion: string, onEvent: (event: WatchEvent<T>) => void, signal: AbortSignal): Promise<void>;
}

export interface ListWatchHandlers<T> {
  /** The whole set, after every list: objects not in it are gone. */
  replace(items: T[]): void;
  upsert(item: T): void;
  remove(item: T): void;
  /** Something went wrong and the loop starts over after `delayMs`; for the log. */
  trouble?(error: Error, delayMs: number): void;
}

export interface ListWatchOptions {
  clock?: Clock;
  /** List again after this long even when nothing failed (default 5 minutes). */
  relistMs?: number;
  backoff?: { initialMs: number; maxMs: number; jitter?: () => number };
}

const GONE = 410;

export class ListWatch<T extends ObjectMeta> {
  readonly #transport: ListWatchTransport<T>;
  readonly #handlers: ListWatchHandlers<T>;
  readonly #clock: Clock;
  readonly #relistMs: number;
  readonly #backoff: { initialMs: number; maxMs: number; jitter?: () => number };
  #resourceVersion: string | undefined;
  #failures = 0;
  #closed = false;
  #current: AbortController | undefined;
  #synced = false;
  /** 410s in a row with no event between them. */
  #gones = 0;
  #syncWaiters: Array<() => void> = [];
  #loop: Promise<void> | undefined;
  /** How many lists and watches were made (for tests and metrics). */
  readonly counts = { lists: 0, watches: 0 };

  constructor(transport: ListWatchTransport<T>, handlers: ListWatchHandlers<T>, options: ListWatchOptions = {}) {
    this.#transport = transport;
    this.#handlers = handlers;
    this.#clock = options.clock ?? realClock;
    this.#relistMs = options.relistMs ?? 5 * 60_000;
    this.#backoff = options.backoff ?? { initialMs: 200, maxMs: 30_000, jitter: Math.random };
  }

  /** The resourceVersion the cache is at. */
  get resourceVersion(): string | undefined {
    return this.#resourceVersion;
  }

  start(): void {
    this.#loop ??= this.#run();
  }

  /** Resolves once the first list has been given to the cache. */
  synced(): Promise<void> {
    return this.#synced ? Promise.resolve() : new Promise((resolve) => this.#syncWaiters.push(resolve));
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#current?.abort(new Error('closed'));
    await this.#loop;
  }

  async #run(): Promise<void> {
    let needList = true;
    while (!this.#closed) {
      const controller = new AbortController();
      this.#current = controller;
      // A re-list on a timer: the watch under way ends, and the loop lists again.
      const relist = this.#clock.setTimeout(() => {
        needList = true;
        controller.abort(new Error('periodic re-list'));
      }, this.#relistMs);
      try {
        if (needList) {
          await this.#list(controller.signal);
          needList = false;
        }
        await this.#watch(controller.signal);
        this.#failures = 0;
      } catch (error) {
        if (this.#closed) break;
        if (controller.signal.aborted && needList) continue; // the periodic re-list
        const failure = error instanceof Error ? error : new Error(String(error));
        needList = true;
        // The version is too old: list again at once (what the informer does too); but a second
        // 410 with no event in between (even a fresh list's version refused) is no version
        // problem a list can cure: then wait like any failure, never spin.
        if (failure instanceof WatchFailure && failure.status === GONE && ++this.#gones < 2) {
          this.#resourceVersion = undefined;
          continue;
        }
        this.#gones = 0;
        this.#failures++;
        const delay = backoffMs(this.#failures, this.#backoff);
        this.#handlers.trouble?.(failure, delay);
        await this.#sleep(delay);
      } finally {
        this.#clock.clearTimeout(relist);
      }
    }
  }

  async #list(signal: AbortSignal): Promise<void> {
    this.counts.lists++;
    const result = await this.#transport.list(signal);
    if (signal.aborted) throw signal.reason;
    this.#resourceVersion = result.resourceVersion;
    this.#handlers.replace(result.items);
    this.#failures = 0;
    if (!this.#synced) {
      this.#synced = true;
      for (const resolve of this.#syncWaiters.splice(0)) resolve();
    }
  }

  async #watch(signal: AbortSignal): Promise<void> {
    this.counts.watches++;
    let gone: WatchFailure | undefined;
    // An ERROR event ends the watch from this side too (the server closes it after one, but a
    // stream left open must not hold the loop).
    const own = new AbortController();
    const forward = () => own.abort(signal.reason);
    signal.addEventListener('abort', forward, { once: true });
    await this.#transport.watch(this.#resourceVersion!, (event) => {
      if (gone || signal.aborted) return;
      if (event.type !== 'ERROR') this.#gones = 0;
      switch (event.type) {
        case 'ADDED':
        case 'MODIFIED':
          this.#handlers.upsert(event.object);
          break;
        case 'DELETED':
          this.#handlers.remove(event.object);
          break;
        case 'BOOKMARK':
          break;
        case 'ERROR': {
          const status = event.object.code;
          gone = new WatchFailure(event.object.message ?? `watch error ${status ?? ''}`.trim(), status);
          own.abort(gone);
          return;
        }
      }
      const version = event.object.metadata?.resourceVersion;
      if (version) this.#resourceVersion = version;
    }, own.signal).finally(() => signal.removeEventListener('abort', forward));
    if (gone) throw gone;
    if (signal.aborted) throw signal.reason;
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      if (this.#closed) return resolve();
      const timer = this.#clock.setTimeout(done, ms);
      const onAbort = () => {
        this.#clock.clearTimeout(timer);
        done();
      };
      const current = this.#current;
      current?.signal.addEventListener('abort', onAbort, { once: true });
      function done() {
        current?.signal.removeEventListener('abort', onAbort);
        resolve();
      }
    });
  }
}

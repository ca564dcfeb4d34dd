// A work queue of names, like client-go's: a name waits at most once, is processed by one worker
// at a time, and failures come back after a capped exponential backoff. Names a person is waiting
// on (a start, a stop, a create) go ahead of everything else: a sync that lands thousands of
// manifests, or a resync, never holds up a click.

import { backoffMs } from '../core/backoff.ts';
import { realClock, type Clock } from '../core/clock.ts';

export type { Clock };

/**
 * What a reconcile asks of the queue, like controller-runtime's Result: nothing (done until the
 * next event), a run again after a delay, or a run again once an operation outside the worker
 * (an extension install) settles. A thrown TerminalError means: do not retry at all.
 */
export type ReconcileResult = {
  requeueAfterMs?: number;
  /** The run only waited for news about to arrive (an exit not reported yet): it settled nothing. */
  waiting?: boolean;
  /** Long work running outside the worker: the name is queued again when it settles. */
  waitFor?: Promise<unknown>;
} | void;

/**
 * A problem retrying cannot fix (a spec.port another server has): the queue does not retry it,
 * and the reconciler does not act again until the spec changes. The reason and message are
 * recorded in status first.
 */
export class TerminalError extends Error {
  readonly reason: string;

  constructor(reason: string, message: string) {
    super(message);
    this.name = 'TerminalError';
    this.reason = reason;
  }
}

export interface QueueOptions {
  workers: number;
  baseBackoffMs?: number;
  maxBackoffMs?: number;
  clock?: Clock;
  onError?: (name: string, error: unknown, attempt: number) => void;
  /** A reconcile threw a TerminalError: it is not retried. */
  onTerminal?: (name: string, error: TerminalError) => void;
}

/** Which lane a name waits in: `user` (someone waits on it) goes before `background`. */
export type Lane = 'user' | 'background';

/** A first-in, first-out line of names with O(1) take from the front; entries whose name moved lanes are skipped. */
class Line {
  #items: string[] = [];
  #head = 0;

  push(name: string): void {
    this.#items.push(name);
  }

  /** The next name for which `current(name)` is true; the others are dropped. */
  shift(current: (name: string) => boolean): string | undefined {
    while (this.#head < this.#items.length) {
      const name = this.#items[this.#head++];
      if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
        this.#items = this.#items.slice(this.#head);
        this.#head = 0;
      }
      if (current(name)) return name;
    }
    return undefined;
  }

  clear(): void {
    this.#items = [];
    this.#head = 0;
  }
}

/** What a worker does with one name. */
export type QueueHandler = (name: string) => Promise<ReconcileResult>;

export class WorkQueue {
  private handler: QueueHandler | undefined;
  private readonly workers: number;
  private readonly baseBackoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly clock: Clock;
  private readonly onError?: QueueOptions['onError'];
  private readonly onTerminal?: QueueOptions['onTerminal'];
  private readonly lines: Record<Lane, Line> = { user: new Line(), background: new Line() };
  /** Names waiting, and the lane each waits in. */
  private readonly queued = new Map<string, Lane>();
  private readonly active = new Set<string>();
  /** Names added again while being processed, with their lane: they run once more afterwards. */
  private readonly dirty = new Map<string, Lane>();
  private readonly failures = new Map<string, number>();
  private readonly delayed = new Map<string, { at: number; handle: unknown }>();
  private readonly idleWaiters: Array<() => void> = [];
  private stopped = false;

  /**
   * `handler` undefined: a queue made before its worker (the parts that queue names are built
   * before the controller that works them off); names added meanwhile wait until work() gives it.
   */
  constructor(handler: QueueHandler | undefined, options: QueueOptions) {
    this.handler = handler;
    this.workers = options.workers;
    this.baseBackoffMs = options.baseBackoffMs ?? 100;
    this.maxBackoffMs = options.maxBackoffMs ?? 30_000;
    this.clock = options.clock ?? realClock;
    this.onError = options.onError;
    this.onTerminal = options.onTerminal;
  }

  /** Gives a queue made without one its worker, once: the names waiting so far start now. */
  work(handler: QueueHandler): void {
    if (this.handler) throw new Error('this queue has its worker already');
    this.handler = handler;
    this.pump();
  }

  /** Queues the name (a name already waiting in the background moves to the user lane when a person asks). */
  add(name: string, lane: Lane = 'background'): void {
    if (this.stopped) return;
    this.cancelDelay(name);
    if (this.active.has(name)) {
      if (lane === 'user' || !this.dirty.has(name)) this.dirty.set(name, lane);
      return;
    }
    const waiting = this.queued.get(name);
    if (waiting === 'user' || waiting === lane) return;
    this.queued.set(name, lane);
    this.lines[lane].push(name);
    this.pump();
  }

  /** Adds the name after a delay; an earlier delay for the same name wins. */
  addAfter(name: string, ms: number): void {
    if (this.stopped) return;
    if (ms <= 0) return this.add(name);
    const at = this.clock.now() + ms;
    const existing = this.delayed.get(name);
    if (existing && existing.at <= at) return;
    if (existing) this.clock.clearTimeout(existing.handle);
    const handle = this.clock.setTimeout(() => {
      this.delayed.delete(name);
      this.add(name);
    }, ms);
    this.delayed.set(name, { at, handle });
  }

  /** Forgets a name's failure history (after it succeeds, or when it is deleted). */
  forget(name: string): void {
    this.failures.delete(name);
  }

  get length(): number {
    return this.queued.size + this.active.size;
  }

  /** Resolves when nothing is queued or running (delayed names do not count). */
  idle(): Promise<void> {
    if (this.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  stop(): void {
    this.stopped = true;
    for (const { handle } of this.delayed.values()) this.clock.clearTimeout(handle);
    this.delayed.clear();
    this.lines.user.clear();
    this.lines.background.clear();
    this.queued.clear();
  }

  backoffFor(attempt: number): number {
    return backoffMs(attempt, { initialMs: this.baseBackoffMs, maxMs: this.maxBackoffMs });
  }

  private cancelDelay(name: string): void {
    const existing = this.delayed.get(name);
    if (existing) {
      this.clock.clearTimeout(existing.handle);
      this.delayed.delete(name);
    }
  }

  private pump(): void {
    while (this.handler && !this.stopped && this.active.size < this.workers) {
      const name = this.lines.user.shift((n) => this.queued.get(n) === 'user')
        ?? this.lines.background.shift((n) => this.queued.get(n) === 'background');
      if (name === undefined) break;
      this.queued.delete(name);
      this.active.add(name);
      void this.run(name);
    }
    if (this.length === 0) for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  private async run(name: string): Promise<void> {
    try {
      const result = await this.handler!(name);
      this.failures.delete(name);
      if (result?.requeueAfterMs !== undefined) this.addAfter(name, result.requeueAfterMs);
      // The worker is free meanwhile; the name comes back once the operation settles.
      if (result?.waitFor) void result.waitFor.then(() => this.add(name), () => this.add(name));
    } catch (error) {
      if (error instanceof TerminalError) {
        this.failures.delete(name);
        this.onTerminal?.(name, error);
        return;
      }
      const attempt = (this.failures.get(name) ?? 0) + 1;
      this.failures.set(name, attempt);
      this.onError?.(name, error, attempt);
      this.addAfter(name, this.backoffFor(attempt));
    } finally {
      this.active.delete(name);
      const again = this.dirty.get(name);
      if (again !== undefined) {
        this.dirty.delete(name);
        this.add(name, again);
      }
      this.pump();
    }
  }
}

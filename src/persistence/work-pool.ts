// A few worker threads that read and hash the files of large snapshots, and check and write the
// files of large restores (pool-worker.ts), so that work runs on every core and never on the
// event loop that serves the editors. Buffers go to and from the workers by transfer, not copy.
// The workers start only once large work keeps coming (see `wants`), and stop after a while
// without work, so a service at rest holds none (two cost about 22 MB of RSS while they run,
// and leave about 7 MB behind once stopped: measured with the service's flags); while a worker
// has no task it keeps no process alive.
import { availableParallelism } from 'node:os';
import { Worker, type TransferListItem } from 'node:worker_threads';
import type { BatchFile, BatchRead } from './read-batch.ts';
import type { HashAlgorithm } from './hash.ts';
import type { WriteEntry, WriteOutcome } from './write-batch.ts';

export type PoolTask =
  | { kind: 'read'; files: BatchFile[]; attempts: number; maxBytes: number }
  | { kind: 'write'; bytes: Uint8Array; entries: WriteEntry[]; algorithm: HashAlgorithm };

type Answer<T extends PoolTask> = T extends { kind: 'read' } ? BatchRead : WriteOutcome[];

/** A task that failed because its worker did (it could not start, or crashed): the caller may do the work itself. */
export class PoolFailure extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PoolFailure';
  }
}

interface Pending {
  resolve: (value: any) => void;
  reject: (error: Error) => void;
}

interface Slot {
  worker: Worker;
  pending: Map<number, Pending>;
  online: boolean;
}

/** Tasks a worker holds at once: the next one waits in its queue while it works on the first. */
const PER_WORKER = 2;
/** After a worker fails to start, none is tried for this long. */
const BROKEN_MS = 60_000;
/** How far back large work counts towards starting the workers. */
const RECENT_MS = 60_000;

// The worker's module beside this one: `.ts` when run from source (tests, bench), `.js` once built.
const WORKER_URL = new URL(`./pool-worker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url);

export class WorkPool {
  readonly size: number;
  private readonly idleMs: number;
  private readonly slots: Slot[] = [];
  private readonly queue: Array<{ id: number; task: PoolTask; transfer: readonly TransferListItem[] } & Pending> = [];
  private nextId = 1;
  private warming = false;
  private brokenState: { error: PoolFailure; until: number } | undefined;
  private idleTimer: NodeJS.Timeout | undefined;

  private readonly url: URL;
  private readonly startBytes: number;
  /** Large work asked about while no worker ran: when, and how many bytes. */
  private readonly recent: Array<{ at: number; bytes: number }> = [];

  /**
   * `startBytes`: workers are started once the large work asked about within a minute adds up
   * to this much (default 128 MiB); `url`: the workers' module (a test seam).
   */
  constructor(size: number, idleMs: number, options: { startBytes?: number; url?: URL } = {}) {
    this.size = Math.max(1, size);
    this.idleMs = idleMs;
    this.startBytes = options.startBytes ?? 128 * 1024 * 1024;
    this.url = options.url ?? WORKER_URL;
  }

  /**
   * Whether work of `bytes` (`minBytes` or more: large work) should go to the workers: yes when
   * one runs. When none does, starting them costs tens of milliseconds of each core, more than
   * they save on one workspace of tens of megabytes (measured: bench/README.md), so they are
   * started only once large work keeps coming (a restore of every server, say); until then it
   * is done on the event loop's thread.
   */
  wants(bytes: number, minBytes: number): boolean {
    if (bytes < minBytes) return false;
    if (this.online > 0) return true;
    const now = Date.now();
    while (this.recent.length > 0 && this.recent[0].at < now - RECENT_MS) this.recent.shift();
    this.recent.push({ at: now, bytes });
    if (this.recent.reduce((sum, work) => sum + work.bytes, 0) < this.startBytes) return false;
    this.recent.length = 0;
    return true;
  }

  /** Runs `task` in a worker; `transfer` lists the buffers handed over (unusable here afterwards). */
  run<T extends PoolTask>(task: T, transfer: readonly TransferListItem[] = []): Promise<Answer<T>> {
    if (this.broken) return Promise.reject(this.broken.error);
    clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    return new Promise((resolve, reject) => {
      this.queue.push({ id: this.nextId++, task, transfer, resolve, reject });
      this.dispatch();
    });
  }

  /**
   * Starts the workers now, so tasks need not wait for them later. Starting one keeps a core busy
   * for tens of milliseconds (two took 65–72 ms): they start one after the other, so a core stays
   * free for the work meanwhile.
   */
  warm(): void {
    if (this.broken) return;
    clearTimeout(this.idleTimer);
    this.warming = true;
    this.spawnNext();
    this.scheduleStop();
  }

  /** Set when a worker could not start: the failure, until when no worker is tried. */
  private get broken(): { error: PoolFailure; until: number } | undefined {
    if (this.brokenState && Date.now() >= this.brokenState.until) this.brokenState = undefined;
    return this.brokenState;
  }

  private set broken(state: { error: PoolFailure; until: number } | undefined) {
    this.brokenState = state;
  }

  /** Why no worker runs for now (one could not start), or undefined. */
  get failure(): PoolFailure | undefined {
    return this.broken?.error;
  }

  /** Workers running (started, taking tasks at once). */
  get online(): number {
    return this.slots.filter((slot) => slot.online).length;
  }

  /** Stops every worker; tasks in flight or waiting fail (with a PoolFailure: their callers may do the work themselves). */
  async close(): Promise<void> {
    clearTimeout(this.idleTimer);
    const stopped = new PoolFailure('the persistence workers were stopped');
    const slots = this.slots.splice(0);
    for (const slot of slots) for (const pending of slot.pending.values()) pending.reject(stopped);
    for (const queued of this.queue.splice(0)) queued.reject(stopped);
    await Promise.all(slots.map((slot) => slot.worker.terminate()));
  }

  private dispatch(): void {
    while (this.queue.length > 0) {
      let slot = this.slots.reduce<Slot | undefined>((best, candidate) => (!best || candidate.pending.size < best.pending.size ? candidate : best), undefined);
      if (!slot) slot = this.spawn();
      else if (slot.pending.size > 0) this.spawnNext();
      if (slot.pending.size >= PER_WORKER) return;
      const { id, task, transfer, resolve, reject } = this.queue.shift()!;
      if (slot.pending.size === 0) slot.worker.ref();
      slot.pending.set(id, { resolve, reject });
      slot.worker.postMessage({ id, task }, transfer as TransferListItem[]);
    }
  }

  /** Starts another worker when there is room and none is starting. */
  private spawnNext(): void {
    if (this.slots.length < this.size && this.slots.every((slot) => slot.online)) this.spawn();
    if (this.slots.length >= this.size) this.warming = false;
  }

  private spawn(): Slot {
    const worker = new Worker(this.url);
    worker.unref();
    const slot: Slot = { worker, pending: new Map(), online: false };
    this.slots.push(slot);
    worker.on('message', (message: { ready?: true; id: number; value?: unknown; error?: { message: string; code?: string } }) => {
      if (message.ready) {
        // Its modules are loaded: it takes tasks at once.
        slot.online = true;
        if (this.warming || this.queue.length > 0 || this.slots.every((other) => other.pending.size > 0)) this.spawnNext();
        return;
      }
      const pending = slot.pending.get(message.id);
      if (!pending) return;
      slot.pending.delete(message.id);
      if (slot.pending.size === 0) slot.worker.unref();
      if (message.error) pending.reject(Object.assign(new Error(message.error.message), message.error.code && { code: message.error.code }));
      else pending.resolve(message.value);
      this.dispatch();
      this.scheduleStop();
    });
    const fail = (error: PoolFailure) => {
      const index = this.slots.indexOf(slot);
      if (index < 0) return;
      this.slots.splice(index, 1);
      // A worker that could not even start: none is tried again for a while (the callers do the work themselves).
      if (!slot.online) this.broken = { error, until: Date.now() + BROKEN_MS };
      for (const pending of slot.pending.values()) pending.reject(error);
      slot.pending.clear();
      if (this.broken) for (const queued of this.queue.splice(0)) queued.reject(error);
      this.dispatch();
    };
    worker.on('error', (error) => fail(new PoolFailure(`a persistence worker failed: ${error.message}`)));
    worker.on('exit', (code) => fail(new PoolFailure(`a persistence worker stopped (exit code ${code})`)));
    return slot;
  }

  private scheduleStop(): void {
    if (this.queue.length > 0 || this.slots.some((slot) => slot.pending.size > 0)) return;
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => void this.close(), this.idleMs);
    this.idleTimer.unref();
  }
}

let shared: WorkPool | undefined;

/** The process's pool: one worker per core, at most 4, stopped after 30 s without work. */
export function sharedPool(): WorkPool {
  return shared ??= new WorkPool(Math.min(4, availableParallelism()), 30_000);
}

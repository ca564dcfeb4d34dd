// Long work for a server (extension installs now; clone and extraction later) runs as an
// operation outside the queue's workers, like a Kubernetes Job beside its controller: at most
// one per server, cancellable, and superseded when the spec asks for something else. A reconcile
// starts it, returns { waitFor: op.done } at once, and reads the outcome on a later run.

export interface Operation<T = unknown> {
  readonly kind: string;
  /** What the operation works toward; a reconcile that wants something else supersedes it. */
  readonly key: string;
  /** What it produced so far (install outcomes…), kept when it is cancelled. */
  readonly data: T;
  /** Settles (never rejects) once the work has ended and its processes are gone. */
  readonly done: Promise<void>;
  readonly settled: boolean;
  /** The last progress it reported, for status and the log. */
  readonly progress: string;
  readonly signal: AbortSignal;
}

/** The work of an operation: stops early when the signal aborts; report() says how far it got. */
export type OperationWork<T> = (data: T, signal: AbortSignal, report: (progress: string) => void) => Promise<void>;

interface Running<T> extends Operation<T> {
  controller: AbortController;
  settled: boolean;
  progress: string;
}

export class Operations {
  private readonly byName = new Map<string, Running<unknown>>();
  private readonly onNews: (name: string) => void;
  private readonly log: (message: string) => void;

  /** onNews(name) runs on every progress report and when an operation settles (it queues the name). */
  constructor(onNews: (name: string) => void, log: (message: string) => void) {
    this.onNews = onNews;
    this.log = log;
  }

  get<T>(name: string, kind: string): Operation<T> | undefined {
    const op = this.byName.get(name);
    return op?.kind === kind ? (op as Running<T>) : undefined;
  }

  /** The name's operation of any kind while it still runs (a server has one at a time). */
  running(name: string): Operation | undefined {
    const op = this.byName.get(name);
    return op && !op.settled ? op : undefined;
  }

  /** Starts an operation; one already there for the name must have been cancelled or dropped. */
  start<T>(name: string, kind: string, key: string, data: T, work: OperationWork<T>, progress: string): Operation<T> {
    if (this.byName.get(name)?.settled === false) throw new Error(`operation for ${name} still running`);
    const controller = new AbortController();
    const op = { kind, key, data, controller, signal: controller.signal, settled: false, progress } as Running<T>;
    (op as { done: Promise<void> }).done = work(data, controller.signal, (next) => {
      op.progress = next;
      this.onNews(name);
    }).catch((error) => {
      this.log(`${kind} for ${name} failed: ${(error as Error).stack ?? error}`);
    }).finally(() => {
      op.settled = true;
      this.onNews(name);
    });
    this.byName.set(name, op as Running<unknown>);
    return op;
  }

  /** Cancels the name's operation, if any, and resolves once it has ended (its processes gone). */
  async cancel(name: string, why: string): Promise<void> {
    const op = this.byName.get(name);
    if (!op) return;
    if (!op.settled) op.controller.abort(new Error(why));
    await op.done;
    if (this.byName.get(name) === op) this.byName.delete(name);
  }

  /** Forgets a settled operation once its outcome is in status. */
  drop(name: string): void {
    if (this.byName.get(name)?.settled) this.byName.delete(name);
  }

  /** Cancels every operation (the service stops) and waits for them to end. */
  async cancelAll(why: string): Promise<void> {
    await Promise.all([...this.byName.keys()].map((name) => this.cancel(name, why)));
  }
}

// Bounds on work in flight: a Limiter lets at most `max` tasks run at once (store requests,
// file reads), the rest wait their turn in order.

export class Limiter {
  private readonly max: number;
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(max: number) {
    this.max = Math.max(1, Math.floor(max));
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.running >= this.max) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.running++;
    try {
      return await task();
    } finally {
      // The slot passes straight to the next waiter, so `running` never drops and rises again.
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}

/** Runs `work` on every item with at most `max` at once; rejects with the first failure once the started ones settle. */
export async function forEachLimited<T>(items: readonly T[], max: number, work: (item: T, index: number) => Promise<void>, signal?: AbortSignal): Promise<void> {
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async () => {
    while (next < items.length && !failure) {
      const index = next++;
      try {
        signal?.throwIfAborted();
        await work(items[index], index);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(1, max), items.length) }, worker));
  if (failure) throw failure.error;
}

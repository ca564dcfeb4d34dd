// Work that must not overlap, run one at a time in the order asked, per key: writes of one
// manifest, snapshots of one server. A failed run never blocks the next; the map holds only keys
// with work pending, so a service at rest holds none.
export class KeyedMutex {
  private readonly tails = new Map<string, Promise<unknown>>();

  /** Runs `work` once every earlier run for `key` has settled; answers its result. */
  run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const run = (this.tails.get(key) ?? Promise.resolve()).then(work, work);
    const settled = run.then(() => undefined, () => undefined);
    this.tails.set(key, settled);
    void settled.then(() => {
      if (this.tails.get(key) === settled) this.tails.delete(key);
    });
    return run;
  }

  /** Settles once every run asked for `key` so far has (at once when there is none). */
  idle(key: string): Promise<unknown> {
    return this.tails.get(key) ?? Promise.resolve();
  }

  get busyKeys(): number {
    return this.tails.size;
  }
}

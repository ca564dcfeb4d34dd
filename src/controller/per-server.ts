// What one part of the controller remembers about each server, in memory only: made on first use,
// dropped with the server. Each step owns one (health probes, crash back-off, placement, sources,
// settings, extensions, idle stops, presence), so a step's facts are found beside its code and no
// step reaches into another's.

export class PerServer<T> {
  readonly #make: () => T;
  readonly #byName = new Map<string, T>();

  constructor(make: () => T) {
    this.#make = make;
  }

  /** The name's state, made on first use. */
  of(name: string): T {
    let state = this.#byName.get(name);
    if (state === undefined) {
      state = this.#make();
      this.#byName.set(name, state);
    }
    return state;
  }

  /** The name's state if it has any, without making it. */
  peek(name: string): T | undefined {
    return this.#byName.get(name);
  }

  forget(name: string): void {
    this.#byName.delete(name);
  }

  get size(): number {
    return this.#byName.size;
  }
}

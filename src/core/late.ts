// A reference to a part that is built after the parts that need it (the composition root's
// cycles: the capacity check asks the controller which editors run, the controller asks the
// capacity check before it starts one). Declared before both and set once the part exists, so
// no closure refers to a variable declared further down; a use before that throws an error that
// names the part, not a ReferenceError from the temporal dead zone.
export class Late<T> {
  readonly name: string;
  private value: T | undefined;
  private bound = false;

  constructor(name: string) {
    this.name = name;
  }

  set(value: T): T {
    if (this.bound) throw new Error(`${this.name} was set twice`);
    this.value = value;
    this.bound = true;
    return value;
  }

  /** The part; throws when it is not built yet. */
  get(): T {
    if (!this.bound) throw new Error(`${this.name} was used before it was built`);
    return this.value as T;
  }

  /** The part, or undefined while it is not built (for work that may be skipped until then). */
  peek(): T | undefined {
    return this.value;
  }
}

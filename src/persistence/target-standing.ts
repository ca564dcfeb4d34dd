// How the persistence target stands, as the health page and the log say it: the last failure
// (with what to do about it) until a call works again, and when one last worked. Every part of
// persistence that calls the store reports here, so the health page has one answer.
import { StoreError } from './types.ts';

export class TargetStanding {
  readonly #target: string;
  readonly #log: (message: string) => void;
  readonly #now: () => number;
  #error: StoreError | undefined;
  #lastSuccessAt: string | null = null;

  constructor(target: string, log: (message: string) => void, now: () => number) {
    this.#target = target;
    this.#log = log;
    this.#now = now;
  }

  get error(): StoreError | undefined {
    return this.#error;
  }

  get lastSuccessAt(): string | null {
    return this.#lastSuccessAt;
  }

  /** Runs a store call, noting whether the target answered. */
  async call<T>(call: () => Promise<T>): Promise<T> {
    try {
      const result = await call();
      this.works();
      return result;
    } catch (error) {
      if (error instanceof StoreError) this.fails(error);
      throw error;
    }
  }

  works(): void {
    this.#lastSuccessAt = new Date(this.#now()).toISOString();
    if (!this.#error) return;
    this.#log(`persistence: ${this.#target} works again`);
    this.#error = undefined;
  }

  /** Said in the log once per distinct failure. */
  fails(error: StoreError): void {
    if (this.#error?.message !== error.message) this.#log(`persistence: ${this.#target} fails: ${error.message}: ${error.hint}`);
    this.#error = error;
  }

  /** The health page's problems: a failing target makes the service "degraded". */
  problems(): string[] {
    return this.#error ? [`persistence: ${this.#target} fails: ${this.#error.message}: ${this.#error.hint}`] : [];
  }
}

// The output of a server's lifecycle commands on its way to the server's log, bounded.
import type { LifecycleName } from '../devcontainer/types.ts';

/**
 * Lines a second of one server's lifecycle commands that go to its log; the rest are counted and
 * said in one line (an npm install's progress must not bury the rest of the log, nor cost the
 * service its CPU). The editor's own output has the log hub's limit (src/logs/rate-limit.ts).
 */
export const LOG_LINES_PER_SECOND = 500;

/** At most LOG_LINES_PER_SECOND output lines a second to the log; what is left out is counted, and said at the step's end. */
export class OutputBudget {
  readonly #emit: (message: string) => void;
  #second = 0;
  #used = 0;
  #dropped = 0;

  constructor(emit: (message: string) => void) {
    this.#emit = emit;
  }

  line(message: string): void {
    const second = Math.floor(Date.now() / 1000);
    if (second !== this.#second) [this.#second, this.#used] = [second, 0];
    if (++this.#used <= LOG_LINES_PER_SECOND) this.#emit(message);
    else this.#dropped++;
  }

  flush(step: LifecycleName): void {
    if (this.#dropped > 0) this.#emit(`${step}: ${this.#dropped} lines of output not logged (more than ${LOG_LINES_PER_SECOND} lines a second)`);
    this.#dropped = 0;
  }
}

// File-system work in slices: the engine makes its many small calls (lstat, open, read, write)
// synchronously, as tar does, because each call through libuv's thread pool costs ten times
// the call itself; between slices of a few milliseconds it yields to the event loop, so the
// editors' proxy and the API keep answering, and the store's requests progress, while
// thousands of files are walked, read or written.
//
// Before each unit of synchronous work (a file), a task runs `while (slicer.due()) await slicer.pass();`:
// checked right before the work, with no await between, so tasks running side by side share
// one slice instead of taking one each.
import { setImmediate as nextTurn } from 'node:timers/promises';

export class Slicer {
  private readonly sliceMs: number;
  private started = performance.now();
  private turn: Promise<void> | undefined;

  constructor(sliceMs = 4) {
    this.sliceMs = sliceMs;
  }

  /** The slice has run its time, or a yield is under way. */
  due(): boolean {
    return this.turn !== undefined || performance.now() - this.started >= this.sliceMs;
  }

  /** A turn of the event loop, the same one for every task waiting. */
  pass(): Promise<void> {
    return this.turn ??= nextTurn().then(() => {
      this.turn = undefined;
      this.started = performance.now();
    });
  }
}

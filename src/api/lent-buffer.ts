// One buffer lent to one write at a time. Answers assembled one after another (GET /servers, a new
// watch stream's list) reuse it: a fresh buffer of 139 KB per answer at 300 servers is memory
// outside V8's heap, which brought full collections and a worse p95 than building strings. While
// a write still holds it, the next answer gets a buffer of its own.

const MIN_BYTES = 16 * 1024;
const LARGE_BYTES = 1024 * 1024;

export class LentBuffer {
  readonly #maxBytes: number;
  #buffer = Buffer.allocUnsafeSlow(0);
  /** Who holds it now (a token per loan, so that a late release of an earlier loan frees nothing). */
  #holder: symbol | undefined;

  /**
   * Answers larger than `maxBytes` always get a buffer of their own, not kept afterwards. The
   * default holds the list of about 40,000 servers: a fresh 7 MB per answer at 10,000 was memory
   * outside the heap that brought a full collection every few answers.
   */
  constructor(maxBytes = 32 * 1024 * 1024) {
    this.#maxBytes = maxBytes;
  }

  /**
   * `length` bytes to write into, and the release to call once the write is done or its
   * connection gone (any number of times; a no-op for a buffer of its own).
   */
  take(length: number): { bytes: Buffer; release: () => void } {
    if (this.#holder !== undefined || length > this.#maxBytes) return { bytes: Buffer.allocUnsafe(length), release: () => undefined };
    // Room to grow: twice a small list, a quarter more of a large one (7 MB at 10,000 servers).
    if (this.#buffer.length < length) this.#buffer = Buffer.allocUnsafeSlow(Math.min(this.#maxBytes, Math.max(length < LARGE_BYTES ? length * 2 : length * 1.25, MIN_BYTES)));
    const holder = Symbol('loan');
    this.#holder = holder;
    const release = () => {
      if (this.#holder === holder) this.#holder = undefined;
    };
    return { bytes: this.#buffer.subarray(0, length), release };
  }

  /** Runs `build` with its allocation taken from here: the bytes it built, and the release as take() gives it. */
  assemble(build: (alloc: (length: number) => Buffer) => Buffer): { bytes: Buffer; release: () => void } {
    let release = () => {};
    const bytes = build((length) => {
      const taken = this.take(length);
      release = taken.release;
      return taken.bytes;
    });
    return { bytes, release };
  }
}

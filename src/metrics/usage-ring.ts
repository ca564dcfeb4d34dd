// Figures over time in a fixed amount of memory: a ring of equal time buckets (a minute each by
// default), each holding the count of samples that fell in it and, for every series, their
// minimum, sum and maximum, plus counts of events (an idle stop). A sample lands in the bucket of
// its time; a bucket reused for a later time is cleared first, so what is read is never older than
// the ring's span. Everything lives in typed arrays made once: a ring's size does not change with
// how many samples it takes or how long it lives.

/** One bucket as read: its start, how many samples fell in it, and each series' min, average and max. */
export interface UsageBucket {
  /** Start of the bucket, ms since the epoch. */
  start: number;
  samples: number;
  /** Per series, in the order the ring was made with; undefined when no sample fell in the bucket. */
  series: ({ min: number; avg: number; max: number } | undefined)[];
  /** Per counter, the events counted in the bucket. */
  counts: number[];
}

export interface UsageRingShape {
  /** Width of a bucket, ms. */
  bucketMs: number;
  /** How many buckets the ring keeps: its span is bucketMs × buckets. */
  buckets: number;
  /** How many sampled series (min, sum, max each). */
  series: number;
  /** How many counted events (a count each). */
  counters?: number;
}

const EMPTY = -1;
/** A bucket's sample count saturates here (a 1 ms sampler would need 65 s buckets to reach it). */
const MAX_SAMPLES = 0xffff;

export class UsageRing {
  readonly bucketMs: number;
  readonly buckets: number;
  readonly #series: number;
  readonly #counters: number;
  /** Which bucket number (ms / bucketMs) each slot holds now, EMPTY for none: a double, as any bucket width may be given. */
  readonly #slotBucket: Float64Array;
  readonly #samples: Uint16Array;
  /** Per slot, per series: min, sum, max. */
  readonly #values: Float32Array;
  readonly #counts: Uint16Array;
  /** The newest bucket number written, EMPTY before the first. */
  #newest = EMPTY;

  constructor(shape: UsageRingShape) {
    if (!(shape.bucketMs > 0) || !Number.isInteger(shape.buckets) || shape.buckets < 1) throw new RangeError(`a usage ring needs a bucket width and at least one bucket, not ${JSON.stringify(shape)}`);
    this.bucketMs = shape.bucketMs;
    this.buckets = shape.buckets;
    this.#series = shape.series;
    this.#counters = shape.counters ?? 0;
    this.#slotBucket = new Float64Array(shape.buckets).fill(EMPTY);
    this.#samples = new Uint16Array(shape.buckets);
    this.#values = new Float32Array(shape.buckets * shape.series * 3);
    this.#counts = new Uint16Array(shape.buckets * this.#counters);
  }

  /** The bytes of the ring's arrays (what it holds however long it lives). */
  get bytes(): number {
    return this.#slotBucket.byteLength + this.#samples.byteLength + this.#values.byteLength + this.#counts.byteLength;
  }

  /** The time span the ring covers, ms. */
  get spanMs(): number {
    return this.bucketMs * this.buckets;
  }

  /** The start of the newest bucket written, ms; undefined for a ring never written. */
  get newestStart(): number | undefined {
    return this.#newest === EMPTY ? undefined : this.#newest * this.bucketMs;
  }

  /** Adds one sample taken at `at` (ms): one value per series. A sample older than the ring's span is dropped. */
  record(at: number, values: ArrayLike<number>): void {
    const slot = this.#slotFor(at);
    if (slot < 0) return;
    const first = this.#samples[slot] === 0;
    if (this.#samples[slot] < MAX_SAMPLES) this.#samples[slot]++;
    for (let s = 0; s < this.#series; s++) {
      const value = Number.isFinite(values[s]) ? values[s] : 0;
      const at3 = (slot * this.#series + s) * 3;
      if (first || value < this.#values[at3]) this.#values[at3] = value;
      this.#values[at3 + 1] += value;
      if (first || value > this.#values[at3 + 2]) this.#values[at3 + 2] = value;
    }
  }

  /** Counts one event of counter `counter` at `at` (ms). */
  count(at: number, counter = 0): void {
    const slot = this.#slotFor(at);
    if (slot < 0 || counter >= this.#counters) return;
    const index = slot * this.#counters + counter;
    if (this.#counts[index] < MAX_SAMPLES) this.#counts[index]++;
  }

  /**
   * The buckets from `from` to `to` (ms) that hold a sample or an event, oldest first; the time
   * between is clipped to what the ring still holds as of `to`.
   */
  read(from: number, to: number): UsageBucket[] {
    const last = Math.floor(to / this.bucketMs);
    const first = Math.max(Math.floor(from / this.bucketMs), last - this.buckets + 1);
    const out: UsageBucket[] = [];
    for (let bucket = first; bucket <= last; bucket++) {
      const slot = bucket % this.buckets;
      if (this.#slotBucket[slot] !== bucket) continue;
      const samples = this.#samples[slot];
      const counts = Array.from({ length: this.#counters }, (_, c) => this.#counts[slot * this.#counters + c]);
      if (samples === 0 && counts.every((n) => n === 0)) continue;
      const series = Array.from({ length: this.#series }, (_, s) => {
        if (samples === 0) return undefined;
        const at3 = (slot * this.#series + s) * 3;
        return { min: this.#values[at3], avg: this.#values[at3 + 1] / samples, max: this.#values[at3 + 2] };
      });
      out.push({ start: bucket * this.bucketMs, samples, series, counts });
    }
    return out;
  }

  /** True when nothing the ring holds is newer than `at - span`: all it has is out of every window. */
  staleAt(at: number): boolean {
    return this.#newest === EMPTY || this.#newest <= Math.floor(at / this.bucketMs) - this.buckets;
  }

  /** The slot of the bucket of `at`, cleared if it held an older bucket; -1 when `at` is older than the span. */
  #slotFor(at: number): number {
    const bucket = Math.floor(at / this.bucketMs);
    if (!Number.isFinite(bucket) || bucket < 0) return -1;
    if (this.#newest !== EMPTY && bucket <= this.#newest - this.buckets) return -1;
    const slot = bucket % this.buckets;
    if (this.#slotBucket[slot] !== bucket) {
      this.#slotBucket[slot] = bucket;
      this.#samples[slot] = 0;
      this.#values.fill(0, slot * this.#series * 3, (slot + 1) * this.#series * 3);
      this.#counts.fill(0, slot * this.#counters, (slot + 1) * this.#counters);
    }
    if (bucket > this.#newest) this.#newest = bucket;
    return slot;
  }
}

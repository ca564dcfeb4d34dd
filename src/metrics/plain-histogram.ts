// A histogram kept in plain numbers from the start, so that prom-client need not be loaded until
// /metrics is first scraped (to keep memory at rest low). Put in a prom-client registry, it reads
// as prom-client's own Histogram would: the same series, labels and values, in the same order.

interface Series {
  labels: Record<string, string>;
  /** Observations per bucket (not cumulative), by index of `bounds`. */
  buckets: number[];
  sum: number;
  count: number;
}

/** The value shape prom-client's registry formats (see its Histogram's getForPromString). */
interface Value {
  labels: Record<string, string | number>;
  sharedLabels: Record<string, string>;
  value: number;
  metricName: string;
}

export class PlainHistogram<L extends string = never> {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly #series = new Map<string, Series>();

  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly L[];
  readonly bounds: readonly number[];

  constructor(name: string, help: string, labelNames: readonly L[], bounds: readonly number[]) {
    this.name = name;
    this.help = help;
    this.labelNames = labelNames;
    this.bounds = bounds;
    // Without labels there is one series, shown from the start with zeros (as prom-client does).
    if (labelNames.length === 0) this.#series.set('', { labels: {}, buckets: bounds.map(() => 0), sum: 0, count: 0 });
  }

  observe(labels: Record<L, string>, seconds: number): void {
    if (!Number.isFinite(seconds)) throw new TypeError(`Value is not a valid number: ${seconds}`);
    let key = '';
    for (const name of this.labelNames) key += `${labels[name]}\u0000`;
    let series = this.#series.get(key);
    if (!series) {
      const own: Record<string, string> = {};
      for (const name of this.labelNames) own[name] = labels[name];
      series = { labels: own, buckets: this.bounds.map(() => 0), sum: 0, count: 0 };
      this.#series.set(key, series);
    }
    const bucket = this.bounds.findIndex((bound) => seconds <= bound);
    if (bucket >= 0) series.buckets[bucket]++;
    series.sum += seconds;
    series.count++;
  }

  /** What prom-client's registry formats: per series, the cumulative buckets, +Inf, sum and count. */
  getForPromString(): { name: string; help: string; type: 'histogram'; values: Value[]; aggregator: 'sum' } {
    const values: Value[] = [];
    const bucketName = `${this.name}_bucket`;
    for (const { labels, buckets, sum, count } of this.#series.values()) {
      let acc = 0;
      this.bounds.forEach((le, i) => {
        acc += buckets[i];
        values.push({ labels: { le }, sharedLabels: labels, value: acc, metricName: bucketName });
      });
      values.push(
        { labels: { le: '+Inf' }, sharedLabels: labels, value: count, metricName: bucketName },
        { labels: {}, sharedLabels: labels, value: sum, metricName: `${this.name}_sum` },
        { labels: {}, sharedLabels: labels, value: count, metricName: `${this.name}_count` },
      );
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  /** The same, with each series' labels in `labels` (prom-client's `get()`, for JSON). */
  get() {
    const data = this.getForPromString();
    return { ...data, values: data.values.map(({ labels, sharedLabels, ...rest }) => ({ ...rest, labels: { ...labels, ...sharedLabels } })) };
  }
}

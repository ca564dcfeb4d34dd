// The usage ring: samples fold into fixed buckets (min, average, max), a window reads only what
// the ring still holds, old buckets are reused for new times, and its size never grows.
import { describe, expect, it } from 'vitest';
import { UsageRing } from '../../src/metrics/usage-ring.ts';

const MINUTE = 60_000;
/** A time well past the epoch, on a bucket boundary. */
const T0 = Date.UTC(2026, 10, 29, 20, 0, 0);

describe('the usage ring', () => {
  it('folds the samples of one bucket into their minimum, average and maximum, per series', () => {
    const ring = new UsageRing({ bucketMs: MINUTE, buckets: 10, series: 2 });
    ring.record(T0 + 1_000, [10, 200]);
    ring.record(T0 + 20_000, [30, 100]);
    ring.record(T0 + 59_999, [20, 300]);
    const [bucket, ...rest] = ring.read(T0, T0 + 59_999);
    expect(rest).toEqual([]);
    expect(bucket.start).toBe(T0);
    expect(bucket.samples).toBe(3);
    expect(bucket.series[0]).toEqual({ min: 10, avg: 20, max: 30 });
    expect(bucket.series[1]).toEqual({ min: 100, avg: 200, max: 300 });
  });

  it('reads a window oldest first, leaving out buckets with nothing in them', () => {
    const ring = new UsageRing({ bucketMs: MINUTE, buckets: 60, series: 1 });
    for (const minute of [0, 1, 2, 5, 6]) ring.record(T0 + minute * MINUTE, [minute]);
    const now = T0 + 6 * MINUTE + 30_000;
    expect(ring.read(now - 60 * MINUTE, now).map((b) => (b.start - T0) / MINUTE)).toEqual([0, 1, 2, 5, 6]);
    // The last 3 minutes: the buckets of minutes 3 to 6 (3 and 4 are empty).
    expect(ring.read(now - 3 * MINUTE, now).map((b) => b.series[0]!.avg)).toEqual([5, 6]);
  });

  it('reuses the oldest bucket for a new time, so a read never reaches past its span', () => {
    const ring = new UsageRing({ bucketMs: MINUTE, buckets: 5, series: 1 });
    for (let minute = 0; minute < 12; minute++) ring.record(T0 + minute * MINUTE + 1, [minute]);
    const now = T0 + 11 * MINUTE + 1;
    // Asked for an hour, it has the last five minutes only: 7 to 11.
    const read = ring.read(now - 60 * MINUTE, now);
    expect(read.map((b) => b.series[0]!.max)).toEqual([7, 8, 9, 10, 11]);
    // Each reused bucket starts afresh: one sample each, not the sum of every lap.
    expect(read.every((b) => b.samples === 1)).toBe(true);
    // A sample older than the span is dropped, not written over a newer bucket.
    ring.record(T0 + 2 * MINUTE, [1000]);
    expect(ring.read(now - 60 * MINUTE, now).map((b) => b.series[0]!.max)).toEqual([7, 8, 9, 10, 11]);
  });

  it('keeps its size whatever it is fed: a fixed number of bytes per bucket', () => {
    const ring = new UsageRing({ bucketMs: MINUTE, buckets: 360, series: 2 });
    const before = ring.bytes;
    // 8 (bucket number) + 2 (samples) + 2 series × 3 figures × 4 bytes.
    expect(before).toBe(360 * (8 + 2 + 24));
    for (let i = 0; i < 100_000; i++) ring.record(T0 + i * 2_000, [i % 100, 200 + (i % 7)]);
    expect(ring.bytes).toBe(before);
    const now = T0 + 99_999 * 2_000;
    const read = ring.read(now - ring.spanMs, now);
    expect(read.length).toBeLessThanOrEqual(360);
    expect(read.length).toBeGreaterThan(355);
    // 30 samples a minute, saturating nothing.
    expect(read[1].samples).toBe(30);
  });

  it('counts events per bucket apart from the samples, and says when all it holds has aged out', () => {
    const ring = new UsageRing({ bucketMs: MINUTE, buckets: 3, series: 1, counters: 1 });
    expect(ring.staleAt(T0)).toBe(true);
    ring.count(T0 + 5_000);
    ring.count(T0 + 6_000);
    ring.record(T0 + MINUTE, [1]);
    const read = ring.read(T0, T0 + MINUTE);
    expect(read.map((b) => [b.samples, b.counts[0], b.series[0]?.avg])).toEqual([[0, 2, undefined], [1, 0, 1]]);
    expect(ring.staleAt(T0 + 3 * MINUTE)).toBe(false);
    expect(ring.staleAt(T0 + 4 * MINUTE)).toBe(true);
  });
});

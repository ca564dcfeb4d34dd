import { describe, expect, it } from 'vitest';
import { backoffMs } from '../../src/core/backoff.ts';

describe('backoffMs', () => {
  it('doubles from the first delay up to the maximum, and never overflows', () => {
    const waits = [1, 2, 3, 4, 5, 6, 7].map((attempt) => backoffMs(attempt, { initialMs: 100, maxMs: 3000 }));
    expect(waits).toEqual([100, 200, 400, 800, 1600, 3000, 3000]);
    expect(backoffMs(0, { initialMs: 100, maxMs: 3000 })).toBe(100);
    expect(backoffMs(5000, { initialMs: 100, maxMs: 3000 })).toBe(3000);
  });

  it('draws a wait between half the delay and all of it with jitter', () => {
    expect(backoffMs(3, { initialMs: 100, maxMs: 3000, jitter: () => 0 })).toBe(200);
    expect(backoffMs(3, { initialMs: 100, maxMs: 3000, jitter: () => 0.5 })).toBe(300);
    expect(backoffMs(3, { initialMs: 100, maxMs: 3000, jitter: () => 0.999 })).toBeCloseTo(399.8);
  });
});

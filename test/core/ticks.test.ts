// Periodic jobs of one period share one timer: they run at the same wake-up, and the timer goes
// when its last job stops.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { every } from '../../src/core/ticks.ts';

describe('every', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('runs jobs of the same period from one timer, together, and jobs of another period on their own', () => {
    const runs: string[] = [];
    const a = every(2000, () => runs.push(`a@${Date.now()}`));
    vi.advanceTimersByTime(1000);
    // Added a second later, it still runs with `a`: the wake-up is shared.
    const b = every(2000, () => runs.push(`b@${Date.now()}`));
    const c = every(30_000, () => runs.push(`c@${Date.now()}`));
    expect(vi.getTimerCount()).toBe(2);
    const start = Date.now() - 1000;
    vi.advanceTimersByTime(3000);
    expect(runs).toEqual([`a@${start + 2000}`, `b@${start + 2000}`, `a@${start + 4000}`, `b@${start + 4000}`]);
    a.stop();
    b.stop();
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(30_000);
    expect(runs.filter((r) => r.startsWith('c@'))).toHaveLength(1);
    expect(runs.filter((r) => r.startsWith('a@'))).toHaveLength(2);
    c.stop();
    c.stop(); // twice is harmless
    expect(vi.getTimerCount()).toBe(0);
  });

  it('runs one function added twice twice, and stops each on its own', () => {
    let count = 0;
    const job = () => count++;
    const first = every(500, job);
    const second = every(500, job);
    vi.advanceTimersByTime(500);
    expect(count).toBe(2);
    first.stop();
    vi.advanceTimersByTime(500);
    expect(count).toBe(3);
    second.stop();
    expect(vi.getTimerCount()).toBe(0);
  });
});

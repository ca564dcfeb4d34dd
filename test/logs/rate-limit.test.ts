import { describe, expect, it } from 'vitest';
import { LineRateLimit, droppedMarker, groupDigits } from '../../src/logs/rate-limit.ts';

/** A clock the test moves by hand. */
function manualClock(start = 1_000_000): { now: () => number; advance: (ms: number) => void; set: (ms: number) => void } {
  let at = start;
  return { now: () => at, advance: (ms) => (at += ms), set: (ms) => (at = ms) };
}

describe('the per-server line rate limit', () => {
  it('lets a burst through at once, then refills at the rate, keeping the first lines of each batch', () => {
    const clock = manualClock();
    const limit = new LineRateLimit({ linesPerSec: 100, burst: 250, now: clock.now });
    expect(limit.take(200)).toBe(200);
    expect(limit.take(200)).toBe(50); // the rest of the burst
    expect(limit.take(10)).toBe(0); // empty, and the clock has not moved
    clock.advance(100); // 10 lines' worth
    expect(limit.take(25)).toBe(10);
    clock.advance(15); // 1.5 lines: one whole line now, half a line kept for later
    expect(limit.take(5)).toBe(1);
    clock.advance(5); // 0.5 + 0.5
    expect(limit.take(5)).toBe(1);
  });

  it('never holds more than the burst, however long it was quiet', () => {
    const clock = manualClock();
    const limit = new LineRateLimit({ linesPerSec: 1000, burst: 300, now: clock.now });
    clock.advance(3_600_000);
    expect(limit.take(10_000)).toBe(300);
  });

  it('refills nothing when the clock goes back', () => {
    const clock = manualClock(5000);
    const limit = new LineRateLimit({ linesPerSec: 100, burst: 100, now: clock.now });
    expect(limit.take(100)).toBe(100);
    clock.set(1000);
    expect(limit.take(1)).toBe(0);
    clock.set(1010); // 10 ms after the time it went back to: one line
    expect(limit.take(5)).toBe(1);
  });

  it('lets everything through when the rate is 0', () => {
    const limit = new LineRateLimit({ linesPerSec: 0, burst: 1, now: () => 0 });
    expect(limit.limited).toBe(false);
    expect(limit.take(1_000_000)).toBe(1_000_000);
  });

  it('counts exactly over a long run: kept + dropped = offered, kept = burst + rate × time', () => {
    const clock = manualClock();
    const limit = new LineRateLimit({ linesPerSec: 5000, burst: 10_000, now: clock.now });
    let kept = 0;
    let offered = 0;
    // 10 s of 20,000 lines/s in batches every 50 ms, the first at once.
    for (let tick = 0; tick < 200; tick++) {
      offered += 1000;
      kept += limit.take(1000);
      clock.advance(50);
    }
    expect(offered).toBe(200_000);
    // The whole burst, and the rate over the 199 intervals between the first batch and the last.
    expect(kept).toBe(10_000 + (5000 * 199 * 50) / 1000);
  });
});

describe('the marker of dropped lines', () => {
  it('groups digits by thousands without Intl', () => {
    expect(groupDigits(0)).toBe('0');
    expect(groupDigits(999)).toBe('999');
    expect(groupDigits(1000)).toBe('1,000');
    expect(groupDigits(12_345)).toBe('12,345');
    expect(groupDigits(1_234_567_890)).toBe('1,234,567,890');
  });

  it('says how many lines were dropped and the limit', () => {
    expect(droppedMarker(12_345, 5000)).toBe('… 12,345 lines dropped (rate limit 5,000 lines/s)');
    expect(droppedMarker(1, 100)).toBe('… 1 line dropped (rate limit 100 lines/s)');
  });
});

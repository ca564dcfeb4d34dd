// The reason an idle stop gives in the server's events and the service log: how long, since when
// no input came (the time of day in UTC), and the timeout in force.
import { expect, it } from 'vitest';
import { idleReason } from '../../src/controller/ensure-idle.ts';

it('says how long the editor was idle and since when no input came, to the minute for long timeouts', () => {
  const since = Date.parse('2026-11-29T14:02:41Z');
  expect(idleReason(60 * 60_000 + 4000, since, 60 * 60_000)).toBe('idle for 60 min: no input since 14:02 UTC (idle timeout 60 min)');
  expect(idleReason(3 * 3600_000 + 5 * 60_000, since, 3 * 3600_000)).toBe('idle for 3 h 5 min: no input since 14:02 UTC (idle timeout 3 h)');
});

it('gives the second when the timeout is under two minutes', () => {
  const since = Date.parse('2026-11-29T23:59:58.400Z');
  expect(idleReason(30_600, since, 30_000)).toBe('idle for 31 s: no input since 23:59:58 UTC (idle timeout 30 s)');
});

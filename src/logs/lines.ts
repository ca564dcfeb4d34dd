// How many log lines a client may ask for: `?lines=` on the REST route, `?tail=` on the streams.

import { apiError } from '../core/error-catalogue.ts';

/**
 * The most lines one request returns. A larger value is refused with 400 rather than clamped,
 * so a client learns the limit instead of silently getting fewer lines than it asked for.
 */
export const MAX_LOG_LINES = 1000;

/** The code a bad value of each parameter is refused with. */
const INVALID = { lines: 'INVALID_LINES', tail: 'INVALID_TAIL' } as const;

function parseCount(name: keyof typeof INVALID, value: unknown, defaultValue: number, min: number): number {
  if (value === undefined) return defaultValue;
  const text = typeof value === 'string' ? value : undefined;
  const count = text !== undefined && /^\d+$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(count) || count < min || count > MAX_LOG_LINES) {
    throw apiError(INVALID[name], { value, min, max: MAX_LOG_LINES, defaultValue });
  }
  return count;
}

/** `?lines=` of GET /servers/{id}/logs: a positive integer up to MAX_LOG_LINES, default 50. */
export function parseLinesParam(value: unknown, defaultLines = 50): number {
  return parseCount('lines', value, defaultLines, 1);
}

/** `?tail=` of the log streams: lines replayed on connect, 0 to MAX_LOG_LINES, default 100. */
export function parseTailParam(value: unknown, defaultTail = 100): number {
  return parseCount('tail', value, defaultTail, 0);
}

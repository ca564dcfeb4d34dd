import { describe, expect, it } from 'vitest';
import { HttpError } from '../../src/core/errors.ts';
import { MAX_LOG_LINES, parseLinesParam, parseTailParam } from '../../src/logs/lines.ts';

describe('the lines parameter of the logs route', () => {
  it('defaults to 50 and accepts a positive integer up to the documented maximum', () => {
    expect(parseLinesParam(undefined)).toBe(50);
    expect(parseLinesParam('1')).toBe(1);
    expect(parseLinesParam('200')).toBe(200);
    expect(parseLinesParam(String(MAX_LOG_LINES))).toBe(MAX_LOG_LINES);
  });

  it.each(['0', '-3', '2.5', 'ten', '', '1e3', ' 5', String(MAX_LOG_LINES + 1)])(
    'refuses %j with a 400 that says what to send instead',
    (value) => {
      let error: unknown;
      try {
        parseLinesParam(value);
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(HttpError);
      expect(error).toMatchObject({ status: 400, code: 'INVALID_LINES' });
      expect((error as HttpError).message).toContain(`1 to ${MAX_LOG_LINES}`);
    },
  );

  it('refuses a repeated parameter, which arrives as an array', () => {
    expect(() => parseLinesParam(['5', '6'])).toThrow(HttpError);
  });

  it('lets the streams ask for no replay with tail=0, and defaults tail to 100', () => {
    expect(parseTailParam('0')).toBe(0);
    expect(parseTailParam(undefined)).toBe(100);
    expect(() => parseTailParam('-1')).toThrow(HttpError);
  });
});

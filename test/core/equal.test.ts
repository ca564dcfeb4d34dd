import { describe, expect, it } from 'vitest';
import { sameData } from '../../src/core/equal.ts';

describe('sameData', () => {
  it('holds values equal as JSON would: key order and undefined members do not count', () => {
    expect(sameData({ a: 1, b: { c: [1, 'x', null] } }, { b: { c: [1, 'x', null] }, a: 1 })).toBe(true);
    expect(sameData({ phase: 'Running', reason: undefined }, { phase: 'Running' })).toBe(true);
    expect(sameData({ phase: 'Running' }, { phase: 'Running', reason: undefined })).toBe(true);
    expect(sameData([undefined], [null])).toBe(true);
    expect(sameData(0, 0)).toBe(true);
    expect(sameData('', '')).toBe(true);
  });

  it('tells apart what JSON tells apart', () => {
    expect(sameData({ a: 1 }, { a: 2 })).toBe(false);
    expect(sameData({ a: 1 }, { a: 1, b: null })).toBe(false);
    expect(sameData({ a: 1 }, { b: 1 })).toBe(false);
    expect(sameData([1, 2], [2, 1])).toBe(false);
    expect(sameData([1], { 0: 1 })).toBe(false);
    expect(sameData({ a: [1] }, { a: [1, 1] })).toBe(false);
    expect(sameData(null, {})).toBe(false);
    expect(sameData('1', 1)).toBe(false);
    expect(sameData({ a: { b: 1 } }, { a: { b: '1' } })).toBe(false);
  });
});

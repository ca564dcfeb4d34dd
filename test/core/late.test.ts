import { describe, expect, it } from 'vitest';
import { Late } from '../../src/core/late.ts';

describe('Late', () => {
  it('gives the part once set, names it when used too early or set twice', () => {
    const controller = new Late<{ enqueue(name: string): string }>('the controller');
    expect(controller.peek()).toBeUndefined();
    expect(() => controller.get()).toThrow('the controller was used before it was built');
    const part = controller.set({ enqueue: (name) => `queued ${name}` });
    expect(controller.get()).toBe(part);
    expect(controller.peek()?.enqueue('a')).toBe('queued a');
    expect(() => controller.set(part)).toThrow('the controller was set twice');
  });
});

import { describe, expect, it } from 'vitest';
import { KeyedMutex } from '../../src/core/mutex.ts';

const deferred = () => {
  let resolve!: () => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<void>((ok, fail) => ((resolve = ok), (reject = fail)));
  return { promise, resolve, reject };
};

describe('KeyedMutex', () => {
  it('runs the work of one key one at a time, in order, and other keys alongside', async () => {
    const mutex = new KeyedMutex();
    const order: string[] = [];
    const first = deferred();
    const a1 = mutex.run('a', async () => {
      order.push('a1 start');
      await first.promise;
      order.push('a1 end');
      return 1;
    });
    const a2 = mutex.run('a', async () => {
      order.push('a2');
      return 2;
    });
    const b = mutex.run('b', async () => {
      order.push('b');
      return 3;
    });
    expect(await b).toBe(3);
    expect(order).toEqual(['a1 start', 'b']);
    first.resolve();
    expect(await Promise.all([a1, a2])).toEqual([1, 2]);
    expect(order).toEqual(['a1 start', 'b', 'a1 end', 'a2']);
  });

  it('lets a failure through to its caller only, and forgets idle keys', async () => {
    const mutex = new KeyedMutex();
    const failing = mutex.run('a', async () => {
      throw new Error('broken');
    });
    const next = mutex.run('a', async () => 'ran');
    await expect(failing).rejects.toThrow('broken');
    expect(await next).toBe('ran');
    await mutex.idle('a');
    await Promise.resolve();
    expect(mutex.busyKeys).toBe(0);
  });

  it('says when the work asked so far for a key has settled', async () => {
    const mutex = new KeyedMutex();
    const gate = deferred();
    let done = false;
    void mutex.run('a', () => gate.promise.then(() => void (done = true)));
    const idle = mutex.idle('a').then(() => done);
    gate.resolve();
    expect(await idle).toBe(true);
  });
});

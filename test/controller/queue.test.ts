// The work queue: one run per name at a time, several names in parallel, retries with capped
// exponential backoff, delayed adds, and a clean stop. Time is a fake clock: nothing sleeps.
import { afterEach, describe, expect, it } from 'vitest';
import { TerminalError, WorkQueue, type ReconcileResult } from '../../src/controller/queue.ts';
import { FakeClock } from '../helpers/fakes.ts';

/** A handler whose runs the test finishes by hand, recording who ran and how many at once. */
class ControlledHandler {
  readonly started: string[] = [];
  readonly running = new Map<string, number>();
  maxConcurrentPerName = 0;
  maxConcurrent = 0;
  private readonly finishers = new Map<string, Array<(result?: ReconcileResult | Error) => void>>();

  readonly handle = (name: string): Promise<ReconcileResult> => {
    this.started.push(name);
    this.running.set(name, (this.running.get(name) ?? 0) + 1);
    this.maxConcurrentPerName = Math.max(this.maxConcurrentPerName, this.running.get(name)!);
    this.maxConcurrent = Math.max(this.maxConcurrent, [...this.running.values()].reduce((a, b) => a + b, 0));
    return new Promise<ReconcileResult>((resolve, reject) => {
      const list = this.finishers.get(name) ?? [];
      list.push((outcome) => {
        this.running.set(name, this.running.get(name)! - 1);
        if (outcome instanceof Error) reject(outcome);
        else resolve(outcome);
      });
      this.finishers.set(name, list);
    });
  };

  /** Finishes the oldest run of the name, then lets the queue react. */
  async finish(name: string, outcome?: ReconcileResult | Error): Promise<void> {
    const next = this.finishers.get(name)?.shift();
    if (!next) throw new Error(`${name} is not running`);
    next(outcome);
    await settle();
  }
}

/** Lets pending promise callbacks (the queue's bookkeeping after a run) happen. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

let queue: WorkQueue | undefined;

afterEach(() => {
  queue?.stop();
  queue = undefined;
});

/**
 * A one-worker queue on a fake clock, stopped after the test, whose handler counts its runs and
 * answers `result(run)`.
 */
function countingQueue(result: (run: number) => ReconcileResult = () => undefined) {
  const clock = new FakeClock();
  let runs = 0;
  const counted = new WorkQueue(async () => result(++runs), { workers: 1, clock });
  queue = counted;
  return { clock, q: counted, runs: () => runs };
}

describe('WorkQueue', () => {
  it('runs a name once at a time: an add during its run makes exactly one more run afterwards', async () => {
    const handler = new ControlledHandler();
    queue = new WorkQueue(handler.handle, { workers: 4, clock: new FakeClock() });

    queue.add('alpha');
    await settle();
    queue.add('alpha');
    queue.add('alpha');
    queue.add('alpha');
    await settle();
    expect(handler.started).toEqual(['alpha']);

    await handler.finish('alpha');
    expect(handler.started).toEqual(['alpha', 'alpha']);
    await handler.finish('alpha');
    await queue.idle();
    expect(handler.started).toEqual(['alpha', 'alpha']);
    expect(handler.maxConcurrentPerName).toBe(1);
  });

  it('collapses repeated adds of a waiting name into one run', async () => {
    const handler = new ControlledHandler();
    queue = new WorkQueue(handler.handle, { workers: 1, clock: new FakeClock() });
    queue.add('busy');
    queue.add('waiting');
    queue.add('waiting');
    queue.add('waiting');
    await handler.finish('busy');
    await handler.finish('waiting');
    await queue.idle();
    expect(handler.started).toEqual(['busy', 'waiting']);
  });

  it('runs different names in parallel, never more at once than it has workers', async () => {
    const handler = new ControlledHandler();
    queue = new WorkQueue(handler.handle, { workers: 2, clock: new FakeClock() });
    for (const name of ['a', 'b', 'c', 'd']) queue.add(name);
    await settle();
    expect(handler.started).toEqual(['a', 'b']);

    await handler.finish('b');
    expect(handler.started).toEqual(['a', 'b', 'c']);
    await handler.finish('a');
    expect(handler.started).toEqual(['a', 'b', 'c', 'd']);
    await handler.finish('c');
    await handler.finish('d');
    await queue.idle();
    expect(handler.maxConcurrent).toBe(2);
  });

  it('retries a failing name with exponential backoff capped at the maximum, and reports each attempt', async () => {
    const clock = new FakeClock();
    const attempts: number[] = [];
    let runs = 0;
    queue = new WorkQueue(async () => {
      runs++;
      throw new Error('disk full');
    }, { workers: 1, clock, baseBackoffMs: 100, maxBackoffMs: 1000, onError: (_name, _error, attempt) => attempts.push(attempt) });

    queue.add('flaky');
    await queue.idle();
    const delays: number[] = [];
    for (let i = 0; i < 6; i++) {
      expect(clock.pendingDelays).toHaveLength(1);
      const [delay] = clock.pendingDelays;
      delays.push(delay);
      clock.advance(delay - 1);
      await settle();
      expect(runs).toBe(i + 1); // not a millisecond early
      clock.advance(1);
      await queue.idle();
      expect(runs).toBe(i + 2);
    }
    expect(delays).toEqual([100, 200, 400, 800, 1000, 1000]);
    expect(attempts).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  it('starts the backoff over once a name succeeds', async () => {
    const clock = new FakeClock();
    const outcomes = [new Error('1'), new Error('2'), 'ok', new Error('3')];
    queue = new WorkQueue(async () => {
      const next = outcomes.shift();
      if (next instanceof Error) throw next;
    }, { workers: 1, clock, baseBackoffMs: 100 });

    queue.add('n');
    await queue.idle();
    clock.advance(100);
    await queue.idle();
    expect(clock.pendingDelays).toEqual([200]);
    clock.advance(200); // succeeds
    await queue.idle();
    expect(clock.pendingDelays).toEqual([]);
    queue.add('n'); // fails again: the first backoff, not the third
    await queue.idle();
    expect(clock.pendingDelays).toEqual([100]);
  });

  it('never retries a terminal error: one run in an hour, reported once, not as a failure', async () => {
    const clock = new FakeClock();
    const failures: number[] = [];
    const terminal: string[] = [];
    let runs = 0;
    queue = new WorkQueue(async () => {
      runs++;
      throw new TerminalError('PortUnavailable', 'spec.port 8010 is already used by server "a": choose another port');
    }, { workers: 1, clock, onError: (_n, _e, attempt) => failures.push(attempt), onTerminal: (name, error) => terminal.push(`${name}: ${error.reason}`) });

    queue.add('stuck');
    await queue.idle();
    clock.advance(3_600_000);
    await queue.idle();
    expect(runs).toBe(1);
    expect(clock.pendingDelays).toEqual([]);
    expect(failures).toEqual([]);
    expect(terminal).toEqual(['stuck: PortUnavailable']);
    queue.add('stuck'); // an event (a spec change) still runs it
    await queue.idle();
    expect(runs).toBe(2);
  });

  it('frees the worker while an operation runs, and runs the name again once it settles', async () => {
    let finishOperation!: () => void;
    const operation = new Promise<void>((resolve) => (finishOperation = resolve));
    const runs: string[] = [];
    queue = new WorkQueue(async (name) => {
      runs.push(name);
      return name === 'installs' && runs.filter((n) => n === 'installs').length === 1 ? { waitFor: operation } : undefined;
    }, { workers: 1, clock: new FakeClock() });

    queue.add('installs');
    await queue.idle();
    queue.add('other'); // the one worker is free although the operation is not done
    await queue.idle();
    expect(runs).toEqual(['installs', 'other']);
    finishOperation();
    await settle();
    await queue.idle();
    expect(runs).toEqual(['installs', 'other', 'installs']);
  });

  it('runs a name again after the delay its reconcile asked for', async () => {
    const { clock, q, runs } = countingQueue((run) => (run === 1 ? { requeueAfterMs: 500 } : undefined));

    q.add('later');
    await q.idle();
    clock.advance(499);
    await q.idle();
    expect(runs()).toBe(1);
    clock.advance(1);
    await q.idle();
    expect(runs()).toBe(2);
    expect(clock.pendingDelays).toEqual([]);
  });

  it('keeps the earliest of two delayed adds of one name, and runs it once', async () => {
    const clock = new FakeClock();
    const runs: string[] = [];
    queue = new WorkQueue(async (name) => {
      runs.push(name);
    }, { workers: 2, clock });

    queue.addAfter('x', 1000);
    queue.addAfter('x', 300);
    queue.addAfter('y', 300);
    queue.addAfter('y', 1000);
    expect(clock.pendingDelays).toEqual([300, 300]);
    clock.advance(299);
    await queue.idle();
    expect(runs).toEqual([]);
    clock.advance(1);
    await queue.idle();
    expect(runs.sort()).toEqual(['x', 'y']);
    clock.advance(5000);
    await queue.idle();
    expect(runs).toHaveLength(2);
  });

  it('runs a name added now at once, dropping its delayed add', async () => {
    const { clock, q, runs } = countingQueue();
    q.addAfter('x', 1000);
    q.add('x');
    await q.idle();
    expect(runs()).toBe(1);
    expect(clock.pendingDelays).toEqual([]);
  });

  it('cancels its timers and ignores new names once stopped', async () => {
    const { clock, q, runs } = countingQueue();
    q.addAfter('x', 100);
    q.addAfter('y', 200);
    q.stop();
    expect(clock.pendingDelays).toEqual([]);
    q.add('z');
    q.addAfter('w', 10);
    clock.advance(1000);
    await q.idle();
    expect(runs()).toBe(0);
    expect(clock.pendingDelays).toEqual([]);
  });

  it('lets a run in progress finish after stop without scheduling its retry', async () => {
    const clock = new FakeClock();
    const handler = new ControlledHandler();
    const q = new WorkQueue(handler.handle, { workers: 1, clock });
    q.add('x');
    q.add('waiting');
    await settle();
    q.add('x'); // would run again afterwards
    q.stop();
    await handler.finish('x', new Error('boom'));
    await q.idle();
    expect(handler.started).toEqual(['x']);
    expect(clock.pendingDelays).toEqual([]);
  });

  it('resolves idle() only when nothing is queued or running', async () => {
    const handler = new ControlledHandler();
    queue = new WorkQueue(handler.handle, { workers: 1, clock: new FakeClock() });
    await queue.idle(); // empty: at once

    queue.add('a');
    queue.add('b');
    let idle = false;
    void queue.idle().then(() => {
      idle = true;
    });
    await handler.finish('a');
    expect(idle).toBe(false);
    await handler.finish('b');
    expect(idle).toBe(true);
    expect(queue.length).toBe(0);
  });

  it('runs a name someone waits on before the background work queued ahead of it, once', async () => {
    const handler = new ControlledHandler();
    queue = new WorkQueue(handler.handle, { workers: 1, clock: new FakeClock() });
    // A sync lands: the only worker is busy with the first of many.
    for (let i = 0; i < 1000; i++) queue.add(`synced-${i}`);
    await settle();
    expect(handler.started).toEqual(['synced-0']);
    // A person starts one of those still waiting, and another server.
    queue.add('synced-500', 'user');
    queue.add('clicked', 'user');
    queue.add('synced-500');
    await handler.finish('synced-0');
    expect(handler.started).toEqual(['synced-0', 'synced-500']);
    await handler.finish('synced-500');
    expect(handler.started.at(-1)).toBe('clicked');
    await handler.finish('clicked');
    expect(handler.started.at(-1)).toBe('synced-1');
    // The rest, in order, each once: synced-500 does not run again from its old place.
    for (let i = 1; i < 1000; i++) if (i !== 500) await handler.finish(`synced-${i}`);
    await queue.idle();
    expect(handler.started.filter((name) => name === 'synced-500')).toHaveLength(1);
    expect(handler.started).toHaveLength(1001);
  });

  it('runs a name asked for by someone during its run again, ahead of the background', async () => {
    const handler = new ControlledHandler();
    queue = new WorkQueue(handler.handle, { workers: 1, clock: new FakeClock() });
    queue.add('alpha');
    await settle();
    queue.add('beta');
    queue.add('alpha', 'user');
    queue.add('alpha');
    await handler.finish('alpha');
    expect(handler.started).toEqual(['alpha', 'alpha']);
    await handler.finish('alpha');
    await handler.finish('beta');
    await queue.idle();
    expect(handler.started).toEqual(['alpha', 'alpha', 'beta']);
  });
});

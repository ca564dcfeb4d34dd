// Capacity's decision on its own: slots held for starts, the memory estimate, the auto limit,
// and which idle editor makes room; with the running set, samples and clock in memory.
import { describe, expect, it } from 'vitest';
import { autoMemoryLimit, Capacity, type CapacityDeps } from '../../src/controller/capacity.ts';
import { machineMemory } from '../../src/runtime/machine-memory.ts';
import { DEFAULT_CONFIG, type Config } from '../../src/config/settings.ts';

function fleet(limits: Partial<Config["capacity"]>) {
  const config = { ...DEFAULT_CONFIG.capacity, maxMemoryMb: 0 as number | 'auto', ...limits };
  const running = new Set<string>();
  const memory = new Map<string, number>();
  const used = new Map<string, number>();
  const queued: string[] = [];
  let now = 1_000_000;
  const deps: CapacityDeps = {
    config: () => config,
    running: () => running,
    memoryOf: (name) => memory.get(name),
    lastUsed: (name) => used.get(name),
    enqueue: (name) => queued.push(name),
    now: () => now,
    machine: () => ({ totalMb: 6144, source: 'a test machine' }),
  };
  const capacity = new Capacity(deps);
  return { capacity, config, running, memory, used, queued, advance: (ms: number) => (now += ms), now: () => now };
}

describe('Capacity', () => {
  it('holds the slot of an admitted start, so a second start for the last slot is refused until it is released', () => {
    const { capacity, running } = fleet({ maxRunning: 2 });
    running.add('a');
    expect(capacity.admit('b')).toEqual({ kind: 'admitted' });
    const second = capacity.admit('c');
    expect(second).toMatchObject({ kind: 'refused', limit: 'capacity.maxRunning' });
    expect(second.kind === 'refused' && second.message).toBe('2 of 2 editors are running or starting (capacity.maxRunning): stop one, or raise capacity.maxRunning in the config');
    // The same start asking again keeps its slot; once given up, the slot is free.
    expect(capacity.admit('b')).toEqual({ kind: 'admitted' });
    capacity.release('b');
    expect(capacity.admit('c')).toEqual({ kind: 'admitted' });
  });

  it('frees a slot held for a start that never ran after two minutes', () => {
    const { capacity, advance } = fleet({ maxRunning: 1 });
    expect(capacity.admit('a').kind).toBe('admitted');
    expect(capacity.admit('b').kind).toBe('refused');
    advance(120_001);
    expect(capacity.admit('b').kind).toBe('admitted');
  });

  it('counts a new editor at the mean of the running ones, at least 200 MB, and one not sampled yet at that estimate', () => {
    const { capacity, running, memory } = fleet({ maxMemoryMb: 1000 });
    running.add('a').add('b');
    memory.set('a', 300).set('b', 500);
    // 800 used + 400 needed > 1000.
    const refused = capacity.admit('c');
    expect(refused.kind === 'refused' && refused.message).toBe('the running editors use 800 MB of 1000 MB (capacity.maxMemoryMb) and one more needs about 400 MB: stop one, or raise capacity.maxMemoryMb in the config');
    memory.set('b', 100);
    // 400 used + 200 (the floor) fits; c, admitted and not sampled, counts at 200 for the next.
    expect(capacity.admit('c').kind).toBe('admitted');
    expect(capacity.read()).toMatchObject({ running: 2, starting: 1, memory_used_mb: 600, memory_limit_mb: 1000, memory_free_mb: 400, editor_estimate_mb: 200 });
  });

  it('takes auto as the machine or cgroup memory less the larger of 1 GB and 20 %', () => {
    expect(autoMemoryLimit({ totalMb: 6144, source: 'x' }).limitMb).toBe(6144 - 1229);
    expect(autoMemoryLimit({ totalMb: 2048, source: 'x' }).limitMb).toBe(1024);
    const container = machineMemory((path) => (path === '/sys/fs/cgroup/memory.max' ? '6442450944\n' : ''));
    expect(container).toEqual({ totalMb: 6144, source: 'the cgroup limit in /sys/fs/cgroup/memory.max' });
    const unlimited = machineMemory((path) => (path === '/sys/fs/cgroup/memory.max' ? 'max\n' : 'x'));
    expect(unlimited.source).toBe("this machine's memory (os.totalmem())");
    const { capacity } = fleet({ maxMemoryMb: 'auto' });
    expect(capacity.read()).toMatchObject({
      memory_limit_mb: 4915,
      memory_limit_source: 'auto: 6144 MB (a test machine) less 1229 MB kept for the service (the larger of 1 GB and 20 %)',
    });
  });

  it('with stopIdlest picks the least recently used idle editor, holds the slot meanwhile, and lets the start decide again once it stopped', () => {
    const { capacity, running, used, queued, now } = fleet({ maxRunning: 3, whenFull: 'stopIdlest', idleAfterSeconds: 60 });
    running.add('busy').add('old').add('older');
    used.set('busy', now() - 1000).set('old', now() - 120_000).set('older', now() - 600_000);
    expect(capacity.admit('new')).toMatchObject({ kind: 'makingRoom', victim: 'older' });
    expect(queued).toEqual(['older']);
    expect(capacity.evictionOf('older')).toBe('new');
    // Meanwhile the held slot keeps others out, and the start waits for the stop.
    expect(capacity.admit('other')).toMatchObject({ kind: 'makingRoom', victim: 'old' });
    expect(capacity.admit('new')).toMatchObject({ kind: 'makingRoom', victim: 'older' });
    capacity.noticeChange();
    running.delete('older');
    capacity.noticeChange();
    expect(queued).toEqual(['older', 'old', 'new']);
    expect(capacity.admit('new')).toEqual({ kind: 'admitted' });
    // No editor idle long enough: refused.
    expect(capacity.admit('third')).toMatchObject({ kind: 'refused' });
  });

  it('wakes the servers it refused when an editor stops, not before', () => {
    const { capacity, running, queued } = fleet({ maxRunning: 1 });
    running.add('a');
    capacity.noticeChange();
    expect(capacity.admit('b').kind).toBe('refused');
    capacity.wait('b');
    capacity.noticeChange();
    expect(queued).toEqual([]);
    running.delete('a');
    capacity.noticeChange();
    expect(queued).toEqual(['b']);
  });

  it('sets no memory limit of its own with auto on a runtime without memory to share (a cluster: the scheduler decides)', () => {
    const running = new Set(['a', 'b', 'c']);
    const cluster = new Capacity({
      config: () => ({ ...DEFAULT_CONFIG.capacity, maxMemoryMb: 'auto' }),
      running: () => running,
      memoryOf: () => 4096,
      lastUsed: () => undefined,
      enqueue: () => {},
      machine: () => undefined,
    });
    expect(cluster.admit('d')).toEqual({ kind: 'admitted' });
    expect(cluster.read()).toMatchObject({ memory_limit_mb: null, memory_free_mb: null, memory_limit_source: expect.stringContaining('no limit of ours') });
  });
});

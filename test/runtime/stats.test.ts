// The stats sampler asks the runtime for usage by editor handle, and answers by server name:
// no pid or /proc of its own, so another runtime's editors are sampled the same way.
import { describe, expect, it } from 'vitest';
import type { RuntimeRef } from '../../src/runtime/interface.ts';
import { StatsSampler } from '../../src/runtime/stats.ts';
import type { EditorUsage } from '../../src/runtime/usage.ts';

describe('the stats sampler', () => {
  it('reports what the runtime says of each server\'s editor handle, and nothing for an editor gone', async () => {
    const alpha: RuntimeRef = { kind: 'process', pid: 101, startTicks: 1 };
    const beta: RuntimeRef = { kind: 'process', pid: 102, startTicks: 2 };
    const asked: RuntimeRef[][] = [];
    const usage = async (handles: RuntimeRef[]) => {
      asked.push(handles);
      // beta is gone by the time the runtime looks: it is left out.
      return new Map<RuntimeRef, EditorUsage>([[alpha, { cpuPercent: 12.5, memoryMb: 210, uptime: 30 }]]);
    };
    const sampler = new StatsSampler(() => new Map([['alpha', alpha], ['beta', beta]]), usage, 60_000);
    await sampler.sample();
    expect(asked).toEqual([[alpha, beta]]);
    expect(sampler.get('alpha')).toEqual({ cpuPercent: 12.5, memoryMb: 210, uptime: 30 });
    expect(sampler.get('beta')).toBeUndefined();
    sampler.dispose();
  });
});

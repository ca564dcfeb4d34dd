// CPU, memory and uptime of running editors, sampled in the background by asking the runtime
// for the usage of every editor's handle at once, so listing servers never waits on it.
import { every, type Periodic } from '../core/ticks.ts';
import type { RuntimeRef } from './interface.ts';
import { clearUsageHistory, type EditorUsage } from './usage.ts';

export type ProcessStats = EditorUsage;

export class StatsSampler {
  private readonly editors: () => Map<string, RuntimeRef>;
  private readonly usage: (handles: RuntimeRef[]) => Promise<Map<RuntimeRef, EditorUsage>>;
  private readonly intervalMs: number;
  private latest = new Map<string, ProcessStats>();
  private samples = 0;
  private timer: Periodic | undefined;
  private running = false;
  private readonly listeners = new Set<() => void>();

  /** editors(): the handle of each server's running editor, by server name; usage: the runtime's. */
  constructor(
    editors: () => Map<string, RuntimeRef>,
    usage: (handles: RuntimeRef[]) => Promise<Map<RuntimeRef, EditorUsage>>,
    intervalMs = 2000,
  ) {
    this.editors = editors;
    this.usage = usage;
    this.intervalMs = intervalMs;
  }

  start(): void {
    if (this.timer) return;
    this.timer = every(this.intervalMs, () => void this.sample());
    void this.sample();
  }

  /** The last sample of the server's editor, by server name. */
  get(name: string): ProcessStats | undefined {
    return this.latest.get(name);
  }

  /** The names the last sample has figures for. */
  names(): IterableIterator<string> {
    return this.latest.keys();
  }

  /** Counts the samples taken: while it stays the same, get() answers with the same objects. */
  get generation(): number {
    return this.samples;
  }

  /** Calls `listener` after each sample (the watch stream sends what changed); returns its removal. */
  onSample(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async sample(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      const editors = this.editors();
      const usage = editors.size === 0 ? new Map() : await this.usage([...editors.values()]);
      const next = new Map<string, ProcessStats>();
      for (const [name, handle] of editors) {
        const sample = usage.get(handle);
        if (sample) next.set(name, sample);
      }
      this.latest = next;
      this.samples++;
    } finally {
      this.running = false;
    }
    for (const listener of this.listeners) listener();
  }

  dispose(): void {
    this.timer?.stop();
    this.timer = undefined;
    this.listeners.clear();
    clearUsageHistory();
  }
}

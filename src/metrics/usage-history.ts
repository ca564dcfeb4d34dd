// Usage over time, kept by the service itself for the dashboard's charts (GET /servers/{id}/usage,
// GET /usage): each server's CPU and memory, and the fleet's running editors, their memory and its
// idle stops, over the last hours (controller.usageHistoryMinutes, in buckets of
// controller.usageBucketSeconds). Fed by the stats sampler's samples and the index's events; no
// database, and /metrics stays the way for Prometheus. Memory is bounded: one ring of typed arrays
// per server that ran within the history (usage-ring.ts), dropped when the server is deleted or
// when all it holds has aged out.
import type { ServerIndex } from '../index/server-index.ts';
import type { StatsSampler } from '../runtime/stats.ts';
import { UsageRing, type UsageBucket } from './usage-ring.ts';

/** The reason of an idle stop in status (controller/ensure-idle.ts writes it). */
const IDLE_TIMEOUT = 'IdleTimeout';

export interface UsageShape {
  /** Width of a bucket, seconds. */
  bucketSeconds: number;
  /** How far back the history goes, minutes. */
  historyMinutes: number;
}

/** At most this many buckets a ring: a longer history gets wider buckets (a week of minutes). */
export const MAX_BUCKETS = 10_080;

export interface UsageSources {
  index: Pick<ServerIndex, 'on' | 'running' | 'serverNamed'>;
  stats: Pick<StatsSampler, 'onSample' | 'names' | 'get'>;
  /** The clock (tests pass their own). */
  now?: () => number;
}

/** A series' figures in one bucket. */
export interface Spread {
  min: number;
  avg: number;
  max: number;
}

interface Window {
  window_seconds: number;
  bucket_seconds: number;
  from: string;
  to: string;
}

export interface ServerUsage extends Window {
  points: { time: string; samples: number; cpu_percent: Spread; memory_mb: Spread }[];
}

export interface FleetUsage extends Window {
  /** Idle stops within the window. */
  idle_stops: number;
  points: { time: string; samples: number; running: Spread | null; memory_mb: Spread | null; idle_stops: number }[];
}

/** The ring's geometry for a shape: buckets of the width asked, widened when there would be more than MAX_BUCKETS. */
export function ringGeometry(shape: UsageShape): { bucketMs: number; buckets: number } {
  const spanMs = shape.historyMinutes * 60_000;
  const bucketMs = Math.max(shape.bucketSeconds * 1000, Math.ceil(spanMs / MAX_BUCKETS / 1000) * 1000);
  return { bucketMs, buckets: Math.max(1, Math.ceil(spanMs / bucketMs)) };
}

const round = (value: number, places: number) => Math.round(value * 10 ** places) / 10 ** places;
const spread = (s: { min: number; avg: number; max: number }, places: number): Spread =>
  ({ min: round(s.min, places), avg: round(s.avg, places), max: round(s.max, places) });

export class UsageHistory {
  readonly #geometry: { bucketMs: number; buckets: number };
  readonly #sources: UsageSources;
  readonly #now: () => number;
  /** Per server name: CPU percent and memory MB (series 0 and 1). */
  readonly #servers = new Map<string, UsageRing>();
  /** Running editors and their memory MB (series 0 and 1); idle stops (counter 0). */
  readonly #fleet: UsageRing;
  /** The idle stop last counted per server (its status.idleStoppedAt), so a status written again is not a second one. */
  readonly #idleStops = new Map<string, string>();
  /** Idle stops from before this service started are in no one's history here. */
  readonly #since: number;
  #lastSweep = 0;
  readonly #unsubscribe: (() => void)[];

  constructor(shape: UsageShape, sources: UsageSources) {
    this.#geometry = ringGeometry(shape);
    this.#sources = sources;
    this.#now = sources.now ?? Date.now;
    this.#since = this.#now();
    this.#fleet = new UsageRing({ ...this.#geometry, series: 2, counters: 1 });
    this.#unsubscribe = [
      sources.stats.onSample(() => this.noticeSample()),
      sources.index.on('changed', (name) => this.#noticeChange(name)),
      sources.index.on('deleted', (name) => this.forget(name)),
    ];
  }

  get bucketMs(): number {
    return this.#geometry.bucketMs;
  }

  /** The history's span, ms: the widest window a read gives. */
  get spanMs(): number {
    return this.#geometry.bucketMs * this.#geometry.buckets;
  }

  /** Servers with a history now. */
  get servers(): number {
    return this.#servers.size;
  }

  /** The bytes of every ring's arrays: the fleet's and each server's. */
  get bytes(): number {
    let total = this.#fleet.bytes;
    for (const ring of this.#servers.values()) total += ring.bytes;
    return total;
  }

  /** Takes the sampler's latest figures into each running server's history and the fleet's. */
  noticeSample(): void {
    const now = this.#now();
    const { stats, index } = this.#sources;
    let memory = 0;
    const values = [0, 0];
    for (const name of stats.names()) {
      const sample = stats.get(name);
      if (!sample) continue;
      let ring = this.#servers.get(name);
      if (!ring) this.#servers.set(name, (ring = new UsageRing({ ...this.#geometry, series: 2 })));
      values[0] = sample.cpuPercent;
      values[1] = sample.memoryMb;
      ring.record(now, values);
      memory += sample.memoryMb;
    }
    values[0] = index.running().length;
    values[1] = memory;
    this.#fleet.record(now, values);
    // Once a bucket: servers stopped longer ago than the history have nothing left to show.
    if (now - this.#lastSweep >= this.#geometry.bucketMs) {
      this.#lastSweep = now;
      for (const [name, ring] of this.#servers) if (ring.staleAt(now)) this.#servers.delete(name);
    }
  }

  /** The server is deleted: its history goes. */
  forget(name: string): void {
    this.#servers.delete(name);
    this.#idleStops.delete(name);
  }

  /** A server's CPU and memory over the last `windowMs` (at most the span); no points when it has not run within it. */
  server(name: string, windowMs = this.spanMs): ServerUsage {
    const window = this.#window(windowMs);
    const buckets = this.#servers.get(name)?.read(window.fromMs, window.toMs) ?? [];
    return {
      ...window.answer,
      points: buckets.map((b) => ({
        time: new Date(b.start).toISOString(),
        samples: b.samples,
        cpu_percent: spread(b.series[0]!, 2),
        memory_mb: spread(b.series[1]!, 1),
      })),
    };
  }

  /** The fleet's running editors, their memory and its idle stops over the last `windowMs` (at most the span). */
  fleet(windowMs = this.spanMs): FleetUsage {
    const window = this.#window(windowMs);
    const buckets: UsageBucket[] = this.#fleet.read(window.fromMs, window.toMs);
    return {
      ...window.answer,
      idle_stops: buckets.reduce((sum, b) => sum + b.counts[0], 0),
      points: buckets.map((b) => ({
        time: new Date(b.start).toISOString(),
        samples: b.samples,
        running: b.series[0] ? spread(b.series[0], 2) : null,
        memory_mb: b.series[1] ? spread(b.series[1], 1) : null,
        idle_stops: b.counts[0],
      })),
    };
  }

  dispose(): void {
    for (const unsubscribe of this.#unsubscribe.splice(0)) unsubscribe();
    this.#servers.clear();
    this.#idleStops.clear();
  }

  /** An idle stop is a status with reason IdleTimeout and an idleStoppedAt not counted before. */
  #noticeChange(name: string): void {
    const status = this.#sources.index.serverNamed(name)?.status;
    const stoppedAt = status?.idleStoppedAt;
    if (status?.reason !== IDLE_TIMEOUT || !stoppedAt || this.#idleStops.get(name) === stoppedAt) return;
    this.#idleStops.set(name, stoppedAt);
    const at = Date.parse(stoppedAt);
    if (Number.isFinite(at) && at >= this.#since) this.#fleet.count(at, 0);
  }

  #window(windowMs: number) {
    const toMs = this.#now();
    const span = Math.min(Math.max(windowMs, this.#geometry.bucketMs), this.spanMs);
    const fromMs = toMs - span;
    return {
      fromMs, toMs,
      answer: { window_seconds: span / 1000, bucket_seconds: this.#geometry.bucketMs / 1000, from: new Date(fromMs).toISOString(), to: new Date(toMs).toISOString() },
    };
  }
}

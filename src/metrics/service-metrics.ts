// GET /metrics: the fleet and the service in the Prometheus text format, in a registry of this
// service's own (several services may run in one process). Per-server series are labelled by
// name and uid, exist only for servers that exist, and are read from the index's records,
// the stats sampler, the activity tracker and plain counters at scrape time: nothing on the
// request path calls prom-client. prom-client itself (with @opentelemetry/api, https and zlib) is
// loaded at the first scrape, not at start (to keep memory at rest low): until then the two
// histograms and the error count are kept in plain numbers, and every other family is read from
// the service's state at scrape time anyway.
import { Router, type RequestHandler } from 'express';
import type { Registry } from 'prom-client';
import type { ServerIndex } from '../index/server-index.ts';
import type { LogHub } from '../logs/index.ts';
import type { Phase } from '../manifests/types.ts';
import type { ProxyObserver } from '../proxy/editor-proxy.ts';
import type { StatsSampler } from '../runtime/stats.ts';
import type { PersonUse } from '../index/quota-gate.ts';
import { timeApiRequests } from './api-timing.ts';
import { registerPersonGauges } from './person-metrics.ts';
import { PlainHistogram } from './plain-histogram.ts';
import { processRegistry } from './process.ts';
import { ProxyTraffic, STATUS_CLASSES } from './traffic.ts';

/** prom-client's Prometheus text format, version 0.0.4 (Registry.PROMETHEUS_CONTENT_TYPE). */
const CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

const PHASES: Phase[] = ['Pending', 'Provisioning', 'Stopped', 'Starting', 'Running', 'Stopping', 'Failed', 'Terminating'];

export interface MetricsSources {
  index: ServerIndex;
  stats: StatsSampler;
  /** When each server was last used (the controller's activity tracker). */
  activity: { lastActivity(name: string): number | undefined };
  logs: LogHub;
  /** Names waiting in the work queue or being reconciled. */
  queueDepth: () => number;
  /** The server a port belongs to (the port allocator's owner). */
  portOwner: (port: number) => string | undefined;
  /** What each person with a server uses (capacity.perPerson); without it, no per-person series. */
  people?: () => PersonUse[];
}

/** The log streams (/ws/logs) and the watch streams (GET /servers?watch=1): open now, and dropped since the start. */
export type StreamCounts = () => { logs: { open: number; dropped: number }; watch: { open: number; dropped: number } };

const NO_STREAMS: StreamCounts = () => ({ logs: { open: 0, dropped: 0 }, watch: { open: 0, dropped: 0 } });

type ServerLabels = { name: string; uid: string };

/** What persistence counts (src/persistence/service-persistence.ts): kept in plain numbers, read at scrape time. */
export interface PersistenceMetrics {
  /** A snapshot ended (also one that found nothing changed, which uploads 0 bytes). */
  snapshot(seconds: number, uploadedBytes: number): void;
  snapshotFailed(): void;
  restore(seconds: number): void;
  restoreFailed(): void;
}

/** CPU seconds of a server's editors, kept rising across restarts of the editor. */
interface CpuCount {
  /** The editor process the last sample was of (its runtime handle, as JSON). */
  process: string;
  /** Its CPU seconds at that sample. */
  last: number;
  total: number;
}

export class ServiceMetrics {
  /** The registry, made with prom-client at the first scrape. */
  #registry: Promise<Registry> | undefined;
  readonly #sources: MetricsSources;
  /** The streams are built after the metrics (the watch feed needs persistence, which counts into them): told by countStreams(). */
  #streams: StreamCounts = NO_STREAMS;
  readonly #traffic: ProxyTraffic;
  readonly #cpu = new Map<string, CpuCount>();
  /** Log lines per server: [from the editor, from the controller]. */
  readonly #logLines = new Map<string, [number, number]>();
  readonly #reconcileSeconds = new PlainHistogram('devbox_reconcile_duration_seconds', 'How long one reconcile of one server took', [],
    [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]);
  #reconcileErrors = 0;
  readonly #apiDurations = new PlainHistogram('devbox_api_request_duration_seconds', 'API requests by route pattern (unmatched: no route took it) and status, until the response was done; watch streams and editor proxy paths are not in it', ['method', 'route', 'status'],
    [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]);
  readonly #snapshotSeconds = new PlainHistogram('devbox_snapshot_duration_seconds', 'How long a snapshot of one server to the persistence target took (also one that found nothing changed)', [],
    [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300]);
  readonly #restoreSeconds = new PlainHistogram('devbox_restore_duration_seconds', 'How long restoring one server\'s files from the persistence target took', [],
    [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600]);
  readonly #persisted = { uploadedBytes: 0, snapshotFailures: 0, restoreFailures: 0 };
  readonly #disposers: Array<() => void> = [];

  constructor(sources: MetricsSources) {
    this.#sources = sources;
    this.#traffic = new ProxyTraffic(sources.portOwner);
    const { index, logs, stats } = sources;
    const traffic = this.#traffic;
    const cpu = this.#cpu;
    const logLines = this.#logLines;
    this.#disposers.push(index.on('reconciled', ({ seconds, error }) => {
      this.#reconcileSeconds.observe({}, seconds);
      if (error !== undefined) this.#reconcileErrors++;
    }));
    // Once per batch (one server's entries), not once per line: a noisy editor sends thousands a second.
    this.#disposers.push(logs.subscribeBatch(null, (entries) => {
      let counts = logLines.get(entries[0].name);
      if (!counts) logLines.set(entries[0].name, (counts = [0, 0]));
      for (const entry of entries) counts[entry.source === 'server' ? 0 : 1]++;
    }));
    this.#disposers.push(stats.onSample(() => this.#countCpu()));
    this.#disposers.push(index.on('deleted', (name) => {
      traffic.forget(name);
      cpu.delete(name);
      logLines.delete(name);
    }));
  }

  /** The registry of this service's families, in their order; prom-client is loaded here. */
  async #build(): Promise<Registry> {
    const { Counter, Gauge, Registry } = await import('prom-client');
    const registry = new Registry();
    const registers = [registry];
    const servers = () => this.#servers();
    const traffic = this.#traffic;
    const { index, stats, activity, logs } = this.#sources;
    const sources = this.#sources;
    const streams = () => this.#streams();

    // Per server, read from the controller's records at scrape time.
    new Gauge({
      name: 'devbox_server_phase', help: 'The server\'s phase: 1 for the one it is in, 0 for the others', labelNames: ['name', 'uid', 'phase'], registers,
      collect() {
        this.reset();
        for (const { labels, phase } of servers()) for (const each of PHASES) this.set({ ...labels, phase: each }, each === phase ? 1 : 0);
      },
    });
    new Counter({
      name: 'devbox_server_restarts_total', help: 'Restarts of the server\'s editor by its restart policy (status.restarts)', labelNames: ['name', 'uid'], registers,
      collect() {
        this.reset();
        for (const { labels, restarts } of servers()) this.inc(labels, restarts);
      },
    });
    const cpu = this.#cpu;
    new Counter({
      name: 'devbox_server_cpu_seconds_total', help: 'CPU time (user and system) of the server\'s editor process group, over all its runs since the service started', labelNames: ['name', 'uid'], registers,
      collect() {
        this.reset();
        for (const { labels } of servers()) {
          const count = cpu.get(labels.name);
          if (count) this.inc(labels, count.total);
        }
      },
    });
    new Gauge({
      name: 'devbox_server_memory_bytes', help: 'Resident memory of the server\'s editor process group at the last sample (running servers only)', labelNames: ['name', 'uid'], registers,
      collect() {
        this.reset();
        for (const { labels } of servers()) {
          const bytes = stats.get(labels.name)?.memoryBytes;
          if (bytes !== undefined) this.set(labels, bytes);
        }
      },
    });
    new Gauge({
      name: 'devbox_server_last_activity_timestamp_seconds', help: 'When the server was last used (a request, or a person\'s input or a terminal\'s output on a WebSocket, through the proxy: docs/idle.md), in seconds since the epoch; absent until it is', labelNames: ['name', 'uid'], registers,
      collect() {
        this.reset();
        for (const { labels } of servers()) {
          const at = activity.lastActivity(labels.name);
          if (at !== undefined) this.set(labels, at / 1000);
        }
      },
    });

    // The proxy's counts, kept in plain numbers by ProxyTraffic.
    new Counter({
      name: 'devbox_server_proxy_requests_total', help: 'HTTP requests proxied to the server\'s editor, by status class', labelNames: ['name', 'uid', 'code'], registers,
      collect() {
        this.reset();
        traffic.keepOnly((name) => index.records.has(name));
        for (const { labels } of servers()) {
          const counts = traffic.get(labels.name);
          if (counts) STATUS_CLASSES.forEach((code, i) => this.inc({ ...labels, code }, counts.requests[i]));
        }
      },
    });
    const bytes = (name: string, help: string, read: (t: NonNullable<ReturnType<ProxyTraffic['get']>>) => number) => new Counter({
      name, help, labelNames: ['name', 'uid'], registers,
      collect() {
        this.reset();
        for (const { labels } of servers()) {
          const counts = traffic.get(labels.name);
          if (counts) this.inc(labels, read(counts));
        }
      },
    });
    bytes('devbox_server_proxy_received_bytes_total', 'Bytes from browsers to the server\'s editor through the proxy (HTTP request bodies, WebSocket data)', (t) => t.received);
    bytes('devbox_server_proxy_sent_bytes_total', 'Bytes from the server\'s editor to browsers through the proxy (HTTP responses with headers, WebSocket data)', (t) => t.sent);
    bytes('devbox_server_websockets_opened_total', 'WebSockets opened to the server\'s editor through the proxy', (t) => t.websocketsOpened);
    new Gauge({
      name: 'devbox_server_websockets_open', help: 'WebSockets open to the server\'s editor through the proxy now', labelNames: ['name', 'uid'], registers,
      collect() {
        this.reset();
        for (const { labels } of servers()) this.set(labels, traffic.get(labels.name)?.websocketsOpen ?? 0);
      },
    });
    const logLines = this.#logLines;
    new Counter({
      name: 'devbox_server_log_lines_total', help: 'Log entries of the server since the service started: lines its editor printed (source="server") and controller events (source="controller")', labelNames: ['name', 'uid', 'source'], registers,
      collect() {
        this.reset();
        for (const name of logLines.keys()) if (!index.records.has(name)) logLines.delete(name);
        for (const { labels } of servers()) {
          const [server, controller] = logLines.get(labels.name) ?? [0, 0];
          this.inc({ ...labels, source: 'server' }, server);
          this.inc({ ...labels, source: 'controller' }, controller);
        }
      },
    });
    new Counter({
      name: 'devbox_server_log_lines_dropped_total', help: 'Lines the server\'s editor printed that the log rate limit kept out of its log entries (still written to server.log)', labelNames: ['name', 'uid'], registers,
      collect() {
        this.reset();
        for (const { labels } of servers()) this.inc(labels, logs.dropped(labels.name));
      },
    });

    // Per person (the owner of servers), read from the capacity's figures at scrape time.
    if (sources.people) registerPersonGauges(Gauge, registers, sources.people);

    // The service.
    registry.registerMetric(this.#reconcileSeconds as never);
    const reconcileErrors = () => this.#reconcileErrors;
    new Counter({
      name: 'devbox_reconcile_errors_total', help: 'Reconciles that failed (retried with backoff, or recorded Failed when retrying cannot help)', registers,
      collect() {
        this.reset();
        this.inc(reconcileErrors());
      },
    });
    new Gauge({
      name: 'devbox_workqueue_depth', help: 'Servers waiting in the work queue or being reconciled', registers,
      collect() {
        this.set(sources.queueDepth());
      },
    });
    registry.registerMetric(this.#apiDurations as never);

    // Persistence (zero without a target).
    registry.registerMetric(this.#snapshotSeconds as never);
    registry.registerMetric(this.#restoreSeconds as never);
    const persisted = this.#persisted;
    for (const [name, help, read] of [
      ['devbox_snapshot_bytes_total', 'Bytes snapshots uploaded to the persistence target (new content only)', () => persisted.uploadedBytes],
      ['devbox_snapshot_failures_total', 'Snapshots that failed (the previous snapshot stays current)', () => persisted.snapshotFailures],
      ['devbox_restore_failures_total', 'Restores of a server\'s files that failed (tried again with backoff)', () => persisted.restoreFailures],
    ] as const) {
      new Counter({
        name, help, registers,
        collect() {
          this.reset();
          this.inc(read());
        },
      });
    }
    new Gauge({
      name: 'devbox_stream_clients', help: 'Clients of the log streams (/ws/logs) and of the watch streams (GET /servers?watch=1) now', labelNames: ['stream'], registers,
      collect() {
        const now = streams();
        this.set({ stream: 'logs' }, now.logs.open);
        this.set({ stream: 'watch' }, now.watch.open);
      },
    });
    new Counter({
      name: 'devbox_stream_clients_dropped_total', help: 'Stream clients closed for falling behind (or, for logs, not answering pings)', labelNames: ['stream'], registers,
      collect() {
        this.reset();
        const now = streams();
        this.inc({ stream: 'logs' }, now.logs.dropped);
        this.inc({ stream: 'watch' }, now.watch.dropped);
      },
    });

    return registry;
  }

  /** For persistence: its durations, bytes and failures. */
  /** Where the stream counts come from, once the streams are built (until then: none open). */
  countStreams(read: StreamCounts): void {
    this.#streams = read;
  }

  /** For persistence: its durations, bytes and failures. */
  get persistence(): PersistenceMetrics {
    const persisted = this.#persisted;
    return {
      snapshot: (seconds, uploadedBytes) => {
        this.#snapshotSeconds.observe({}, seconds);
        persisted.uploadedBytes += uploadedBytes;
      },
      snapshotFailed: () => void persisted.snapshotFailures++,
      restore: (seconds) => this.#restoreSeconds.observe({}, seconds),
      restoreFailed: () => void persisted.restoreFailures++,
    };
  }

  /** For the proxy: counts each request and WebSocket per server. */
  get observer(): ProxyObserver {
    return this.#traffic.observer;
  }

  /** Express middleware timing the API's requests; mount it before everything else. */
  apiTimer(): RequestHandler {
    return timeApiRequests(this.#apiDurations);
  }

  /** GET /metrics: this service's metrics, then the process's. */
  router(): Router {
    const router = Router();
    router.get('/metrics', async (_req, res) => {
      const text = await this.text();
      res.setHeader('Cache-Control', 'no-store');
      res.type(CONTENT_TYPE).send(text);
    });
    return router;
  }

  async text(): Promise<string> {
    this.#registry ??= this.#build();
    return (await (await this.#registry).metrics()) + '\n' + (await (await processRegistry()).metrics());
  }

  dispose(): void {
    for (const dispose of this.#disposers.splice(0)) dispose();
  }

  /** Every server that has a uid (as GET /servers lists them), with what its series need. */
  #servers(): Array<{ labels: ServerLabels; phase: Phase; restarts: number }> {
    const out: Array<{ labels: ServerLabels; phase: Phase; restarts: number }> = [];
    for (const record of this.#sources.index.records.values()) {
      const server = record.server;
      const uid = server?.metadata.uid;
      if (!server || !uid) continue;
      out.push({ labels: { name: record.name, uid }, phase: server.status?.phase ?? 'Pending', restarts: server.status?.restarts ?? 0 });
    }
    return out;
  }

  /** After each stats sample: adds what each editor used since the last one; a new editor process starts from zero. */
  #countCpu(): void {
    for (const [name, ref] of this.#sources.index.editorsToSample()) {
      const seconds = this.#sources.stats.get(name)?.cpuSeconds;
      if (seconds === undefined) continue;
      // The runtime's reference says which editor process it is (for a local one: pid and start time).
      const process = JSON.stringify(ref);
      const count = this.#cpu.get(name) ?? { process, last: 0, total: 0 };
      if (count.process !== process) {
        count.process = process;
        count.last = 0;
      }
      // A child that exited takes its CPU time with it: the sum may drop, the counter never does.
      count.total += Math.max(0, seconds - count.last);
      count.last = seconds;
      this.#cpu.set(name, count);
    }
  }
}

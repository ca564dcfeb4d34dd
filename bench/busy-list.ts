// GET /servers as a busy client meets it: ONE client process that has just driven 30 creates and
// starts through the API (the stub editor), keeps the 30 editors running, and then, from the same
// process and keep-alive connection, times 5,000 sequential GET /servers. Beside it, in the same
// run and against the same service, the same 5,000 GETs from a fresh client process (what the
// `list` section measures), so the two differ only in the client's history.
//
// With BENCH_LIST_TRACE=1 the service is run with this file preloaded (`--import`, see `traceService`
// at the bottom): it records the service's garbage collections, its event loop's delay, each
// stats sample, each feed rebuild, each timer callback and each GET /servers it answered, with
// wall-clock times; the client records its own collections and each request's times, and the
// report says what the slow requests overlapped (`causes`). BENCH_LIST_PROFILE=<folder> adds a CPU
// profile of the service over the busy client's GETs (BENCH_LIST_PROFILE_INTERVAL: µs, 500).
// Each client then times bare Node.js answering the same bytes (the floor), and the bench reads
// /proc meanwhile for the cores each process used (`cores_busy`). BENCH_LIST_BODY=drop: the
// clients drop each answer unread instead of reading it as text.
//
// Usage: `npm run bench -- list-busy`; alone: `node bench/busy-list.ts` (BENCH_MAIN=… for another
// build, BENCH_LIST_REQUESTS for another count).
import { fork } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, PerformanceObserver, performance, type PerformanceEntry } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';

const SELF = fileURLToPath(import.meta.url);
/** Wall-clock ms with sub-ms precision, comparable between processes on this machine. */
const wall = () => performance.timeOrigin + performance.now();

export interface ListLatency {
  requests: number;
  p50_ms: number;
  p95_ms: number;
  p99_ms: number;
  max_ms: number;
  /** Requests over 1 ms and over the target (1.1 ms). */
  over_1ms: number;
  /** How long the timed requests took end to end. */
  span_s: number;
}

interface Timed { start: number; end: number }
type Span = Timed & { label: string };
interface ClientRecord { times: Timed[]; gc: Span[] }

const sortedCopy = (values: number[]) => [...values].sort((a, b) => a - b);
const pick = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
const r3 = (n: number) => Math.round(n * 1000) / 1000;

function summary(times: Timed[]): ListLatency {
  const ms = sortedCopy(times.map((t) => t.end - t.start));
  return {
    requests: ms.length,
    p50_ms: r3(pick(ms, 50)),
    p95_ms: r3(pick(ms, 95)),
    p99_ms: r3(pick(ms, 99)),
    max_ms: r3(ms[ms.length - 1]),
    over_1ms: ms.filter((m) => m > 1).length,
    span_s: r3((times[times.length - 1].end - times[0].start) / 1000),
  };
}

// --- The client (a process of its own) ---

/** One keep-alive connection (maxSockets 1) for everything the client sends. */
function client(base: string) {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  /** `keep`: the answer's text is kept (else read and dropped, as bench/latency-client.ts does). */
  const send = (method: string, path: string, body?: unknown, keep = true) => new Promise<{ status: number; text: string; timed: Timed }>((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const start = wall();
    const req = request(`${base}${path}`, {
      method, agent,
      headers: payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
    }, (res) => {
      let text = '';
      if (keep) res.setEncoding('utf8');
      res.on('data', keep ? (chunk: string) => (text += chunk) : () => undefined);
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text, timed: { start, end: wall() } }));
    });
    req.on('error', reject);
    req.end(payload);
  });
  const json = async (method: string, path: string, body?: unknown) => {
    const { status, text } = await send(method, path, body);
    if (status >= 400) throw new Error(`${method} ${path}: ${status} ${text}`);
    return JSON.parse(text);
  };
  return { send, json, close: () => agent.destroy() };
}

/**
 * Each answer is read as text, as a client that uses it does (BENCH_LIST_BODY=drop: read and
 * dropped, as bench/latency-client.ts does; the client then does less per request).
 */
const KEEP_BODY = process.env.BENCH_LIST_BODY !== 'drop';

/** Sequential keep-alive GETs of `path`: a warm-up of 200, then `requests` timed. */
async function timeGets(c: ReturnType<typeof client>, path: string, requests: number): Promise<Timed[]> {
  for (let i = 0; i < 200; i++) await c.send('GET', path, undefined, KEEP_BODY);
  const times: Timed[] = [];
  for (let i = 0; i < requests; i++) {
    const { status, timed } = await c.send('GET', path, undefined, KEEP_BODY);
    if (status !== 200) throw new Error(`GET ${path}: ${status}`);
    times.push(timed);
  }
  return times;
}

/** The client's own collections, so a slow request the client caused is told from the service's. */
function observeGc(into: Span[]): () => void {
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) into.push({ label: gcKind(e), start: performance.timeOrigin + e.startTime, end: performance.timeOrigin + e.startTime + e.duration });
  });
  observer.observe({ entryTypes: ['gc'] });
  return () => observer.disconnect();
}

function gcKind(e: PerformanceEntry): string {
  const kind = (e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind;
  return kind === 1 ? 'gc minor' : kind === 2 ? 'gc major' : kind === 4 ? 'gc incremental' : kind === 8 ? 'gc weak' : `gc ${kind}`;
}

/**
 * busy: creates and starts `count` servers, then times; fresh: only times. With `floor`, the same
 * client then times the floor server as many times (after the service, never interleaved with it).
 */
async function runClient(mode: 'busy' | 'fresh', base: string, count: number, requests: number, floor?: string): Promise<ClientRecord & { ids: string[]; floor?: Timed[] }> {
  const gc: Span[] = [];
  const stop = observeGc(gc);
  const c = client(base);
  const ids: string[] = [];
  if (mode === 'busy') {
    for (let i = 0; i < count; i++) ids.push((await c.json('POST', '/servers', { name: `busy ${i}` })).id);
    for (const id of ids) {
      // A start that failed (a port taken meanwhile by another program) is tried once more, and said.
      const started = await c.json('POST', `/servers/${id}/start`).catch(async (error: Error) => {
        console.error(`busy client: ${error.message}; starting it again`);
        return c.json('POST', `/servers/${id}/start`);
      });
      if (started.data?.status !== 'running') throw new Error(`start answered ${JSON.stringify(started)}`);
    }
  }
  const times = await timeGets(c, '/servers', requests);
  c.close();
  let floorTimes: Timed[] | undefined;
  if (floor) {
    const f = client(floor);
    floorTimes = await timeGets(f, '/servers', requests);
    f.close();
  }
  stop();
  return { times, gc, ids, floor: floorTimes };
}

function forkClient(mode: 'busy' | 'fresh', base: string, count: number, requests: number, out: string, floor: string, cpu: CpuWatch): Promise<void> {
  const child = fork(SELF, ['client', mode, base, String(count), String(requests), out, floor], { stdio: 'inherit', env: { ...process.env, NODE_OPTIONS: '' } });
  cpu.client = child.pid;
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${mode} client exited with ${code}`))));
  });
}

/**
 * Where the machine's two cores went while requests were timed: the service, the client, the floor
 * server, and everything else (the editors, other users of the machine), read from /proc every
 * 50 ms by the bench's own process.
 */
class CpuWatch {
  client: number | undefined;
  readonly #samples: { at: number; total: number; service: number; serviceMain: number; client: number; floor: number }[] = [];
  readonly #timer: NodeJS.Timeout;
  readonly service: number;
  readonly floor: number;
  constructor(service: number, floor: number) {
    this.service = service;
    this.floor = floor;
    this.#timer = setInterval(() => this.#sample(), 50);
  }

  /** CPU ticks of a process, all its threads (or of one thread: `thread`). */
  static ticks(pid: number | undefined, thread?: number): number {
    if (pid === undefined) return 0;
    try {
      const text = readFileSync(thread === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${thread}/stat`, 'utf8');
      const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
      return Number(fields[11]) + Number(fields[12]);
    } catch {
      return 0;
    }
  }

  #sample(): void {
    const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0].split(/\s+/).slice(1, 9).map(Number);
    // Busy: everything but idle and iowait.
    const total = cpu.reduce((a, b) => a + b, 0) - cpu[3] - cpu[4];
    this.#samples.push({
      at: Date.now(), total,
      service: CpuWatch.ticks(this.service), serviceMain: CpuWatch.ticks(this.service, this.service),
      client: CpuWatch.ticks(this.client), floor: CpuWatch.ticks(this.floor),
    });
  }

  /** Cores busy on average from `from` to `to` (wall ms), by whom. */
  between(from: number, to: number) {
    const inside = this.#samples.filter((x) => x.at >= from && x.at <= to);
    if (inside.length < 2) return undefined;
    const [a, b] = [inside[0], inside[inside.length - 1]];
    const cores = (ticks: number) => r3(ticks / ((b.at - a.at) / 10));
    // A client's or the floor's ticks read 0 once it has gone: only differences within its life count.
    const own = (key: 'service' | 'serviceMain' | 'client' | 'floor') => Math.max(0, b[key] - a[key]);
    return {
      machine: cores(b.total - a.total),
      service: cores(own('service')),
      // Its event loop's thread; the rest is V8's helpers (garbage collection, compiling) and libuv's pool.
      service_main_thread: cores(own('serviceMain')),
      client: cores(own('client')),
      floor_server: cores(own('floor')),
      everything_else: cores(Math.max(0, b.total - a.total - own('service') - own('client') - own('floor'))),
    };
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}

/**
 * The floor: bare Node.js (node:http, nothing else) in a process of its own, with `npm start`'s
 * flags as the service has them, answering every request with the bytes and headers of the
 * service's GET /servers (fetched from the service at its first request, a warm-up one): what no
 * Node.js service can beat on this machine, at that moment.
 */
function startFloor(service: string): Promise<{ url: string; pid: number; close: () => void }> {
  // With `npm start`'s environment and node flags (heap sizes, malloc arenas), as the service has them.
  const words = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).scripts.start as string).split(/\s+/);
  const node = words.indexOf('node');
  const env = Object.fromEntries(words.slice(0, node).filter((w) => w.includes('=')).map((w) => w.split('=') as [string, string]));
  const flags = words.slice(node + 1).filter((w) => w.startsWith('--'));
  const child = fork(SELF, ['floor', service], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], env: { ...process.env, ...env, NODE_OPTIONS: '' }, execArgv: flags });
  return new Promise((resolve, reject) => {
    child.once('message', (url) => resolve({ url: url as string, pid: child.pid!, close: () => child.kill() }));
    child.once('exit', (code) => reject(new Error(`the floor server exited with ${code}`)));
  });
}

async function serveFloor(service: string): Promise<void> {
  const { createServer, get } = await import('node:http');
  let answer: Promise<{ headers: Record<string, string>; body: Buffer }> | undefined;
  const fetchAnswer = () => new Promise<{ headers: Record<string, string>; body: Buffer }>((resolve, reject) => {
    get(`${service}/servers`, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const headers: Record<string, string> = {};
        for (const [name, value] of Object.entries(res.headers)) {
          if (typeof value === 'string' && !['date', 'connection', 'keep-alive'].includes(name)) headers[name] = value;
        }
        resolve({ headers, body: Buffer.concat(chunks) });
      });
    }).on('error', reject);
  });
  const server = createServer((req, res) => {
    (answer ??= fetchAnswer()).then(({ headers, body }) => {
      res.writeHead(200, headers);
      res.end(body);
    }, () => res.destroy());
  });
  server.keepAliveTimeout = 65_000;
  server.listen(0, '127.0.0.1', () => process.send!(`http://127.0.0.1:${(server.address() as { port: number }).port}`));
}

// --- The bench ---

/**
 * A busy client's GET /servers against a fresh client's, one service with `count` running stub
 * editors that the busy client started. `offset`: the bench's port range.
 */
export async function benchBusyList(bin: string, count: number, requests: number, offset: number) {
  const { benchPorts, round, startBenchService } = await import('./harness.ts');
  // BENCH_LIST_PROFILE=<folder>: the service's CPU profile is written there too (the trace is on with it).
  const profile = process.env.BENCH_LIST_PROFILE;
  const trace = process.env.BENCH_LIST_TRACE === '1' || profile !== undefined;
  const dir = join(tmpdir(), `devbox-busy-list-${process.pid}`);
  const serviceOut = join(dir, 'service-trace.json');
  const { mkdirSync, rmSync } = await import('node:fs');
  mkdirSync(dir, { recursive: true });
  const service = await startBenchService(bin, benchPorts(offset), {
    env: trace ? {
      NODE_OPTIONS: `--import=${pathToFileURL(SELF).href}`,
      BENCH_LIST_TRACE_OUT: serviceOut,
      // The profile covers the busy client's GETs: from the first GET /servers to the last of them.
      ...(profile && { BENCH_LIST_PROFILE_OUT: join(profile, 'service-busy-client.cpuprofile'), BENCH_LIST_PROFILE_GETS: String(requests + 200) }),
    } : {},
  });
  let closed = false;
  try {
    const busyOut = join(dir, 'busy.json');
    const freshOut = join(dir, 'fresh.json');
    const floor = await startFloor(service.url);
    const cpu = new CpuWatch(service.pid, floor.pid);
    try {
      await forkClient('busy', service.url, count, requests, busyOut, floor.url, cpu);
      await forkClient('fresh', service.url, count, requests, freshOut, floor.url, cpu);
    } finally {
      floor.close();
      cpu.stop();
    }
    const busy = JSON.parse(readFileSync(busyOut, 'utf8')) as ClientRecord & { floor: Timed[] };
    const fresh = JSON.parse(readFileSync(freshOut, 'utf8')) as ClientRecord & { floor: Timed[] };
    const servers = await service.call('GET', '/servers');
    const result: Record<string, unknown> = {
      servers: servers.length,
      running_editors: servers.filter((s: { status: string }) => s.status === 'running').length,
      busy_client: summary(busy.times),
      fresh_client: summary(fresh.times),
      // The same clients, right after, against bare Node.js serving the same bytes (see startFloor).
      floor: { busy_client: summary(busy.floor), fresh_client: summary(fresh.floor) },
      // Cores in use while each was timed (2 on the CI kind of machine).
      cores_busy: {
        busy_client: cpu.between(busy.times[0].start, busy.times[busy.times.length - 1].end),
        busy_client_floor: cpu.between(busy.floor[0].start, busy.floor[busy.floor.length - 1].end),
        fresh_client: cpu.between(fresh.times[0].start, fresh.times[fresh.times.length - 1].end),
        fresh_client_floor: cpu.between(fresh.floor[0].start, fresh.floor[fresh.floor.length - 1].end),
      },
      service_rss_mb: round(service.rssMb(), 1),
    };
    if (trace) {
      await service.close();
      closed = true;
      const traced = JSON.parse(readFileSync(serviceOut, 'utf8')) as ServiceTrace;
      result.causes = { busy_client: causes(busy, traced), fresh_client: causes(fresh, traced), service: traced.summary };
    }
    return result;
  } finally {
    if (!closed) await service.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

// --- Finding the causes: what the slow requests overlapped ---

interface ServiceTrace {
  /** GET /servers as the service handled them: from the request event to the end of res.end. */
  handled: Timed[];
  spans: Span[];
  summary: Record<string, unknown>;
}

/**
 * For the requests above the target (1.1 ms): where the time went (before the service's handler
 * ran, in it, after it), and which service activity or client collection each overlapped, against
 * how much of the whole run that activity covered (what chance alone would give).
 */
function causes(client: ClientRecord, service: ServiceTrace) {
  const times = client.times;
  const slowAt = 1.1;
  const from = times[0].start;
  const to = times[times.length - 1].end;
  const handled = service.handled.filter((h) => h.start >= from - 1 && h.end <= to + 1);
  // Each request's handling by the service: the one that started inside it (requests are sequential).
  let j = 0;
  const parts = times.map((t) => {
    while (j < handled.length && handled[j].start < t.start) j++;
    const h = j < handled.length && handled[j].start <= t.end ? handled[j] : undefined;
    return h && { before: h.start - t.start, inside: h.end - h.start, after: t.end - h.end };
  });
  const slow = times.map((t, i) => ({ t, part: parts[i], ms: t.end - t.start })).filter((s) => s.ms > slowAt);
  const spans = [...service.spans.filter((s) => s.end >= from && s.start <= to), ...client.gc.map((s) => ({ ...s, label: `client ${s.label}` }))];
  const labels = [...new Set(spans.map((s) => s.label))];
  const overlaps = (a: Timed, b: Timed, slack = 0.05) => a.start <= b.end + slack && b.start <= a.end + slack;
  const byLabel = labels.map((label) => {
    const mine = spans.filter((s) => s.label === label);
    const covered = mine.reduce((sum, s) => sum + Math.max(0.01, s.end - s.start), 0);
    const hit = slow.filter((s) => mine.some((m) => overlaps(s.t, m))).length;
    const mean = covered / mine.length;
    return { label, count: mine.length, mean_ms: r3(mean), max_ms: r3(Math.max(...mine.map((s) => s.end - s.start))), share_of_run: r3(covered / (to - from)), slow_overlapping: hit };
  }).sort((a, b) => b.slow_overlapping - a.slow_overlapping);
  const unexplained = slow.filter((s) => !spans.some((m) => overlaps(s.t, m))).length;
  const median = (xs: number[]) => (xs.length === 0 ? undefined : r3(pick(sortedCopy(xs), 50)));
  const matched = slow.filter((s) => s.part);
  const all = parts.filter((p): p is NonNullable<typeof p> => p !== undefined);
  // p50 / p95 of each second of the run (a tail spread evenly, or one period's), and of the
  // service's part of each request (its handler) and the rest (the client, the kernel, waiting).
  const seconds: string[] = [];
  for (let at = from; at < to; at += 1000) {
    const which = times.flatMap((t, i) => (t.start >= at && t.start < at + 1000 ? [i] : []));
    if (which.length === 0) continue;
    const total = sortedCopy(which.map((i) => times[i].end - times[i].start));
    const handler = sortedCopy(which.flatMap((i) => (parts[i] ? [parts[i]!.inside] : [])));
    const rest = sortedCopy(which.flatMap((i) => (parts[i] ? [parts[i]!.before + parts[i]!.after] : [])));
    seconds.push(`${which.length} requests: ${r3(pick(total, 50))} / ${r3(pick(total, 95))} ms; handler ${r3(pick(handler, 50))} / ${r3(pick(handler, 95))}; the rest ${r3(pick(rest, 50))} / ${r3(pick(rest, 95))}`);
  }
  return {
    by_second: seconds,
    slow_requests: slow.length,
    slow_at_ms: slowAt,
    // Medians, ms: client send → handler start; the handler; handler end → client has the answer.
    parts_all: { before: median(all.map((p) => p.before)), inside: median(all.map((p) => p.inside)), after: median(all.map((p) => p.after)) },
    parts_slow: { before: median(matched.map((s) => s.part!.before)), inside: median(matched.map((s) => s.part!.inside)), after: median(matched.map((s) => s.part!.after)) },
    overlapping: byLabel,
    overlapping_nothing: unexplained,
  };
}

// --- The service side of BENCH_LIST_TRACE (this file preloaded into the service) ---

async function traceService(out: string): Promise<void> {
  const profileOut = process.env.BENCH_LIST_PROFILE_OUT;
  const profileGets = Number(process.env.BENCH_LIST_PROFILE_GETS ?? 0);
  // µs between samples: at 100 the profiler's own cost inflates short JavaScript functions.
  const profileInterval = Number(process.env.BENCH_LIST_PROFILE_INTERVAL ?? 500);
  // Editors the service starts must not load this too.
  for (const name of ['NODE_OPTIONS', 'BENCH_LIST_TRACE_OUT', 'BENCH_LIST_PROFILE_OUT', 'BENCH_LIST_PROFILE_GETS']) delete process.env[name];
  const { Session } = await import('node:inspector');
  const session = profileOut ? new Session() : undefined;
  let gets = 0;
  const countGet = () => {
    if (!session) return;
    gets++;
    if (gets === 1) {
      session.connect();
      session.post('Profiler.setSamplingInterval', { interval: profileInterval });
      session.post('Profiler.enable', () => session.post('Profiler.start'));
    } else if (gets === profileGets) {
      session.post('Profiler.stop', (error, result) => {
        if (!error) writeFileSync(profileOut!, JSON.stringify(result.profile));
        session.disconnect();
      });
    }
  };
  const spans: Span[] = [];
  const handled: Timed[] = [];
  const span = (label: string, start: number) => spans.push({ label, start, end: wall() });
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  const gc: Span[] = [];
  observeGc(gc);
  // Timer callbacks, labelled by where in dist/ they were set.
  const where = (stack = '') => /\/dist\/([^)]+?):(\d+):\d+\)?$/m.exec(stack.split('\n').slice(2).find((l) => l.includes('/dist/')) ?? '')?.slice(1, 3).join(':') ?? 'other';
  for (const name of ['setTimeout', 'setInterval'] as const) {
    const original = globalThis[name] as (fn: (...a: unknown[]) => unknown, ms?: number, ...rest: unknown[]) => NodeJS.Timeout;
    const wrapped = function (fn: (...a: unknown[]) => unknown, ms?: number, ...rest: unknown[]) {
      if (typeof fn !== 'function') return original(fn, ms, ...rest);
      const label = `timer ${where(new Error().stack)}`;
      return original(function (this: unknown, ...args: unknown[]) {
        const start = wall();
        try {
          return fn.apply(this, args);
        } finally {
          if (wall() - start > 0.02) span(label, start);
        }
      }, ms, ...rest);
    };
    // util.promisify(setTimeout) and the like keep working.
    for (const key of Reflect.ownKeys(original)) if (!(key in wrapped)) Object.defineProperty(wrapped, key, Object.getOwnPropertyDescriptor(original, key)!);
    (globalThis as Record<string, unknown>)[name] = wrapped;
  }
  const dist = new URL('./', pathToFileURL(process.argv[1]));
  const load = (path: string) => import(new URL(path, dist).href);
  const [{ StatsSampler }, { ServerFeed }, { ProcessRuntime }, { HeartbeatReader }, { Controller }, http] = await Promise.all([
    load('runtime/stats.js'), load('api/server-feed.js'), load('runtime/processes.js'), load('controller/heartbeats.js'), load('controller/controller.js'), import('node:http'),
  ]);
  const wrapAsync = (proto: Record<string, unknown>, method: string, label: string) => {
    const original = proto[method] as (...a: unknown[]) => unknown;
    proto[method] = function (this: unknown, ...args: unknown[]) {
      const start = wall();
      const result = original.apply(this, args);
      // The part up to the first await runs on the event loop at once: its own span.
      span(`${label} (synchronous part)`, start);
      if (result instanceof Promise) void result.finally(() => span(`${label} (start to end)`, start)).catch(() => undefined);
      return result;
    };
  };
  wrapAsync(StatsSampler.prototype, 'sample', 'stats sample');
  wrapAsync(ProcessRuntime.prototype, 'usage', 'runtime usage (/proc)');
  wrapAsync(HeartbeatReader.prototype, 'readOnce', 'heartbeat round');
  wrapAsync(Controller.prototype, 'resync', 'controller resync');
  // What assembling each list answer costs inside the service (GET /servers' own work, fast-reads.ts).
  const listing: number[] = [];
  const listBytes = ServerFeed.prototype.listBytes;
  ServerFeed.prototype.listBytes = function (this: unknown, ...args: unknown[]) {
    const start = performance.now();
    try {
      return listBytes.apply(this, args);
    } finally {
      listing.push(performance.now() - start);
    }
  };
  for (const method of ['refreshAll', 'refresh']) {
    const original = ServerFeed.prototype[method];
    ServerFeed.prototype[method] = function (this: unknown, ...args: unknown[]) {
      const start = wall();
      try {
        return original.apply(this, args);
      } finally {
        if (method === 'refreshAll' || wall() - start > 0.05) span(`feed ${method}`, start);
      }
    };
  }
  // Each GET /servers: the request event to the end of the handler (res.end included).
  const emit = http.Server.prototype.emit as (...a: unknown[]) => boolean;
  http.Server.prototype.emit = function (this: unknown, event: string, ...args: unknown[]) {
    if (event !== 'request') return emit.apply(this, [event, ...args]);
    const req = args[0] as { method?: string; url?: string };
    const start = wall();
    try {
      return emit.apply(this, [event, ...args]);
    } finally {
      if (req.method === 'GET' && req.url === '/servers') {
        handled.push({ start, end: wall() });
        countGet();
      }
    }
  } as typeof http.Server.prototype.emit;
  process.on('exit', () => {
    delay.disable();
    const ms = (ns: number) => r3(ns / 1e6);
    const totals = new Map<string, { count: number; ms: number; max: number }>();
    for (const s of [...spans, ...gc]) {
      const t = totals.get(s.label) ?? { count: 0, ms: 0, max: 0 };
      t.count++;
      t.ms += s.end - s.start;
      t.max = Math.max(t.max, s.end - s.start);
      totals.set(s.label, t);
    }
    // The busy client's answers come first, then the fresh client's (each requests + 200 warm-up), then the floor's fetch and the bench's own.
    const stats = (calls: number[]) => {
      const sorted = sortedCopy(calls);
      return sorted.length === 0 ? undefined : { count: sorted.length, p50: r3(pick(sorted, 50)), p95: r3(pick(sorted, 95)), p99: r3(pick(sorted, 99)), mean: r3(sorted.reduce((a, b) => a + b, 0) / sorted.length) };
    };
    const half = Math.floor(listing.length / 2);
    const summary = {
      event_loop_delay_ms: { p50: ms(delay.percentile(50)), p99: ms(delay.percentile(99)), max: ms(delay.max) },
      list_assembly_ms: { first_half: stats(listing.slice(0, half)), second_half: stats(listing.slice(half)) },
      activity: Object.fromEntries([...totals].sort((a, b) => b[1].ms - a[1].ms).map(([k, v]) => [k, { count: v.count, total_ms: r3(v.ms), mean_ms: r3(v.ms / v.count), max_ms: r3(v.max) }])),
    };
    writeFileSync(out, JSON.stringify({ handled, spans: [...spans, ...gc.map((g) => ({ ...g, label: `service ${g.label}` }))], summary }));
  });
}

if (process.argv[1] === SELF && process.argv[2] === 'client') {
  const [mode, base, count, requests, out, floor] = process.argv.slice(3) as ['busy' | 'fresh', string, string, string, string, string | undefined];
  runClient(mode, base, Number(count), Number(requests), floor).then(
    (record) => {
      writeFileSync(out, JSON.stringify(record));
      process.exit(0);
    },
    (error) => {
      console.error(error);
      process.exit(1);
    },
  );
} else if (process.argv[1] === SELF && process.argv[2] === 'floor') {
  await serveFloor(process.argv[3]);
} else if (process.argv[1] === SELF) {
  // Alone: one run of the bench with the stub editor.
  const { STUB_EDITOR } = await import('./harness.ts');
  const requests = Number(process.env.BENCH_LIST_REQUESTS ?? 5000);
  console.log(JSON.stringify(await benchBusyList(STUB_EDITOR, 30, requests, 12), null, 2));
} else if (process.env.BENCH_LIST_TRACE_OUT) {
  await traceService(process.env.BENCH_LIST_TRACE_OUT);
}

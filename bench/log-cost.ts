// What one noisy editor's output costs the service: an editor printing one line per write at
// 20,000 lines/s (one line per request under load), side by side with it silent, and the log
// capture before this design against after it, alternating, in one run.
//
//   node bench/log-cost.ts [seconds per phase] [pipeline|service]     (BENCH_QUICK=1: one round of each)
//
// "before" is the log capture of BENCH_LOGS_BASELINE (a git revision; default b443d8e, the last
// one with a read and an entry per line, no batching and no rate limit), taken from git into a
// temporary folder (and compiled there for the service setup); "after" is this checkout.
// Two setups, each in its own processes as in production:
// - pipeline: the service's log part as service-parts.ts wires it (bench/log-pipeline.ts: LogHub
//   with 256 KiB of history per server, LogStreamServer, a per-entry subscriber) in a child
//   process per build; its CPU time (process.cpuUsage) and event-loop delay
//   (monitorEventLoopDelay, 1 ms resolution) per phase, and a phase at twice the rate (what a
//   noisier editor adds once the rate limit holds). BENCH_LOG_PROFILE=<dir> runs the children
//   under --cpu-prof.
// - service: the compiled service of each build (bench/harness.ts), both running, each with two
//   stub editors, "noisy" and "quiet": its CPU per line (/proc) and event-loop delay
//   (prom-client's, 10 ms resolution, read from GET /metrics, which resets it) per phase; then
//   the quiet editor's page through the proxy, one request at a time (latency) and under load
//   (autocannon, 32 connections: throughput), with the noisy editor off and on, and the same
//   writer appending to a file no service follows (the floor: what the noisy process itself
//   takes from the cores), in rounds whose order turns.
// The noisy editor is bench/noisy-writer.ts appending to the server's editor.out (the file the
// runtime gives the editor as its stdout), one write(2) per line. A phase "with a stream client"
// adds one WebSocket client on /ws/logs (all servers, as the dashboard's log view).

import { execFileSync, fork, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { WebSocket } from 'ws';
import { opened } from '../test/helpers/net.ts';
import type { PhaseFigures } from './log-pipeline.ts';
import { benchPorts, median, percentile, round, sleep, startBenchService } from './harness.ts';

const WRITER = fileURLToPath(new URL('./noisy-writer.ts', import.meta.url));
const PIPELINE = fileURLToPath(new URL('./log-pipeline.ts', import.meta.url));
const SELF = fileURLToPath(import.meta.url);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BASELINE = process.env.BENCH_LOGS_BASELINE ?? 'b443d8e';

/** The baseline's sources (and, with `compile`, its build) in a temporary folder, next to this checkout's node_modules. */
function baselineTree(compile: boolean): { dir: string; logs: string; main: string; remove: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), 'devbox-bench-baseline-'));
  const files = ['src', 'schemas', 'templates', 'package.json', 'tsconfig.json', 'tsconfig.build.json'];
  execFileSync('sh', ['-c', `git -C "$1" archive "$2" ${files.join(' ')} | tar -x -C "$3"`, 'sh', ROOT, BASELINE, dir]);
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
  if (compile) execFileSync(path.join(ROOT, 'node_modules', '.bin', 'tsc'), ['-p', path.join(dir, 'tsconfig.build.json')], { stdio: 'inherit' });
  return { dir, logs: path.join(dir, 'src', 'logs'), main: path.join(dir, 'dist', 'main.js'), remove: () => rmSync(dir, { recursive: true, force: true }) };
}
/** One phase: `rate` lines a second into editorOut for phaseSec (then a moment to settle), or silence as long; the lines written. */
async function writePhase(editorOut: string, rate: number, phaseSec: number): Promise<number> {
  if (rate <= 0) {
    await sleep(phaseSec * 1000);
    return 0;
  }
  const written = await startWriter(editorOut, rate, phaseSec).done;
  await sleep(SETTLE_MS);
  return written;
}

const BUILDS = ['before', 'after'] as const;
type Build = (typeof BUILDS)[number];

/** CPU time (user + system) of a process so far, in µs, from /proc (clock ticks of 10 ms). */
function cpuUs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100;
}
/** Time for the service to read what was written before the phase's CPU is read. */
const SETTLE_MS = 1500;
/** Seconds of requests one at a time to the quiet editor, in each proxy round. */
const PROBE_SEC = 3;

/** The noisy editor: a child appending `linesPerSec` lines a second, one write each, until stopped. */
function startWriter(file: string, linesPerSec: number, seconds: number): { done: Promise<number>; stop: () => void } {
  const child = spawn(process.execPath, [WRITER, file, String(linesPerSec), String(seconds)], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (chunk) => (out += chunk));
  const done = new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => {
      try {
        resolve((JSON.parse(out) as { written: number }).written);
      } catch {
        reject(new Error(`the noisy writer exited with ${code}: ${out}`));
      }
    });
  });
  return { done, stop: () => child.kill('SIGTERM') };
}

/** A client of /ws/logs counting frames, and the lines the rate limit's markers say were dropped. */
async function streamClient(url: string): Promise<{ frames: () => number; reportedDropped: () => number; close: () => void }> {
  let frames = 0;
  let dropped = 0;
  const socket = new WebSocket(url);
  socket.on('message', (data) => {
    frames++;
    const text = data.toString();
    if (text.includes(' dropped (rate limit ')) {
      const match = /"message":"… ([\d,]+) lines? dropped/.exec(text);
      if (match) dropped += Number(match[1].replaceAll(',', ''));
    }
  });
  await opened(socket);
  return { frames: () => frames, reportedDropped: () => dropped, close: () => socket.terminate() };
}

const percent = (cpu: number, wallMs: number) => round((cpu / (wallMs * 1000)) * 100, 1);

export interface LogCostOptions {
  /** Seconds each phase writes (or stays silent). Default 5. */
  phaseSec?: number;
  /** Default 20,000. */
  linesPerSec?: number;
  /** Rounds of silent, noisy, noisy with a stream client; medians are reported. Default 2. */
  rounds?: number;
}

/** One phase: lines written, the process's CPU and wall time over it (its settle included), and what else was seen. */
interface Phase {
  written: number;
  cpuUs: number;
  wallMs: number;
  lag?: { p50: number; p99: number; max: number };
  entries?: number;
  droppedByHub?: number;
  frames?: number;
  reportedDropped?: number;
}

type Run = (rate: number, client: boolean) => Promise<Phase>;

/**
 * For each build: a warm-up, then rounds of silent, noisy, noisy with a stream client, and (with
 * `double`) noisy at twice the rate, the builds' order turning each round. The CPU a line costs
 * is the phase's CPU less what the same process spent silent for as long (same round), per line
 * written.
 */
async function costPhases(runs: Record<Build, Run>, rounds: number, linesPerSec: number, double = false) {
  for (const build of BUILDS) await runs[build](linesPerSec, false);
  const kinds = [
    { key: 'noisy', rate: linesPerSec, client: false },
    { key: 'noisy_with_stream_client', rate: linesPerSec, client: true },
    ...(double ? [{ key: 'noisy_at_twice_the_rate', rate: 2 * linesPerSec, client: false }] : []),
  ];
  const figures = Object.fromEntries(BUILDS.map((build) => [build, {
    silent: [] as Phase[],
    phases: new Map(kinds.map((kind) => [kind.key, { rate: kind.rate, runs: [] as Phase[], costs: [] as number[] }])),
  }])) as Record<Build, { silent: Phase[]; phases: Map<string, { rate: number; runs: Phase[]; costs: number[] }> }>;
  for (let r = 0; r < rounds; r++) {
    for (const build of r % 2 === 0 ? BUILDS : [...BUILDS].reverse()) {
      const idle = await runs[build](0, false);
      figures[build].silent.push(idle);
      for (const kind of kinds) {
        const phase = await runs[build](kind.rate, kind.client);
        const into = figures[build].phases.get(kind.key)!;
        into.runs.push(phase);
        into.costs.push((phase.cpuUs - (idle.cpuUs / idle.wallMs) * phase.wallMs) / phase.written);
      }
    }
  }
  const lag = (runs: Phase[]) => ({
    ...(runs[0].lag && {
      loop_delay_p50_ms: round(median(runs.map((p) => p.lag!.p50)), 2),
      loop_delay_p99_ms: round(median(runs.map((p) => p.lag!.p99)), 2),
      loop_delay_max_ms: round(Math.max(...runs.map((p) => p.lag!.max)), 2),
    }),
  });
  const describe = ({ rate, runs, costs }: { rate: number; runs: Phase[]; costs: number[] }) => {
    const last = runs.at(-1)!;
    return {
      ...(rate !== linesPerSec && { lines_per_sec: rate }),
      cpu_us_per_line: round(median(costs), 2),
      cpu_us_per_line_rounds: costs.map((c) => round(c, 2)),
      // µs a line × lines a second: the share of one core the noisy editor costs at that rate.
      cpu_percent_of_a_core: round((median(costs) * rate) / 1e4, 1),
      lines_written: last.written,
      ...(last.entries !== undefined && { entries_kept: last.entries }),
      ...(last.droppedByHub !== undefined && { lines_dropped_by_rate_limit: last.droppedByHub }),
      ...(last.frames !== undefined && { stream_frames_received: last.frames, stream_reported_dropped: last.reportedDropped }),
      ...lag(runs),
    };
  };
  const byBuild = Object.fromEntries(BUILDS.map((build) => {
    const { silent, phases } = figures[build];
    return [build, {
      silent: { cpu_percent_of_a_core: round(median(silent.map((p) => percent(p.cpuUs, p.wallMs))), 1), ...lag(silent) },
      ...Object.fromEntries([...phases].map(([key, value]) => [key, describe(value)])),
    }];
  })) as unknown as Record<Build, Record<string, { cpu_us_per_line?: number }>>;
  // after ÷ before, CPU per line, phase by phase.
  const ratio = Object.fromEntries(kinds.map(({ key }) => [key, round(byBuild.after[key].cpu_us_per_line! / byBuild.before[key].cpu_us_per_line!, 3)]));
  return { ...byBuild, cpu_per_line_after_vs_before: ratio };
}

// --- The pipeline, in a child process (bench/log-pipeline.ts) ---------------------------------

function ask<T>(child: ChildProcess, message: string): Promise<T> {
  return new Promise((resolve) => {
    child.once('message', (answer) => resolve(answer as T));
    child.send(message);
  });
}

/** The log pipeline alone: CPU and event-loop delay, silent, noisy, noisy with a stream client, noisy at twice the rate. */
export async function benchLogCostPipeline(options: LogCostOptions = {}): Promise<Record<string, unknown>> {
  const { phaseSec = 5, linesPerSec = 20_000, rounds = 2 } = options;
  const profileDir = process.env.BENCH_LOG_PROFILE;
  const execArgv = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, '--cpu-prof-interval=100'] : [];
  const baseline = baselineTree(false);
  const children: ChildProcess[] = [];
  try {
    const runs = {} as Record<Build, Run>;
    for (const build of BUILDS) {
      const env = build === 'before' ? { ...process.env, BENCH_LOGS_SRC: baseline.logs } : process.env;
      const child = fork(PIPELINE, [], { execArgv, env, stdio: 'inherit' });
      children.push(child);
      const { port, editorOut } = await new Promise<{ port: number; editorOut: string }>((resolve, reject) => {
        child.once('message', (message) => resolve(message as { port: number; editorOut: string }));
        child.once('exit', (code) => reject(new Error(`the ${build} pipeline exited with ${code}`)));
      });
      runs[build] = async (rate, client) => {
        const stream = client ? await streamClient(`ws://127.0.0.1:${port}/ws/logs?tail=0`) : undefined;
        await ask(child, 'begin');
        const written = await writePhase(editorOut, rate, phaseSec);
        const figures = await ask<PhaseFigures>(child, 'end');
        stream?.close();
        return {
          written,
          cpuUs: figures.cpuUs,
          wallMs: figures.wallMs,
          lag: { p50: figures.loopDelayP50Ms, p99: figures.loopDelayP99Ms, max: figures.loopDelayMaxMs },
          entries: figures.entries,
          droppedByHub: figures.droppedByHub,
          frames: stream?.frames(),
          reportedDropped: stream?.reportedDropped(),
        };
      };
    }
    return { baseline: BASELINE, lines_per_sec: linesPerSec, phase_sec: phaseSec, rounds, ...(await costPhases(runs, rounds, linesPerSec, true)) };
  } finally {
    for (const child of children) {
      if (child.exitCode !== null || child.signalCode !== null) continue;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.disconnect();
      await exited;
    }
    baseline.remove();
  }
}

// --- The real service -------------------------------------------------------------------------

/** Requests to `url` one at a time, 5 ms apart (about 150 a second): what a person using another editor waits. */
function startProbe(url: string): { stop: () => Promise<number[]> } {
  const latencies: number[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const began = performance.now();
      const res = await fetch(url);
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`probe: ${url} answered ${res.status}`);
      latencies.push(performance.now() - began);
      await sleep(5);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return latencies;
    },
  };
}

/** prom-client's event-loop lag since the previous scrape (a scrape resets it), in ms. */
async function loopLag(base: string): Promise<{ p50: number; p99: number; max: number } | undefined> {
  const res = await fetch(`${base}/metrics`);
  if (res.status !== 200) return undefined;
  const text = await res.text();
  const read = (name: string) => Number(new RegExp(`^nodejs_eventloop_lag_${name}_seconds (\\S+)$`, 'm').exec(text)?.[1]) * 1000;
  return { p50: round(read('p50'), 2), p99: round(read('p99'), 2), max: round(read('max'), 2) };
}

/** Each build's compiled service with a noisy and a quiet stub editor: CPU per line, loop delay, the quiet editor's proxy throughput. */
export async function benchLogCostThroughService(
  editorBin: string, offset: number, options: LogCostOptions & { proxyRounds?: number } = {},
): Promise<Record<string, unknown>> {
  const { phaseSec = 5, linesPerSec = 20_000, rounds = 3, proxyRounds = 4 } = options;
  const baseline = baselineTree(false);
  const services: Awaited<ReturnType<typeof startBenchService>>[] = [];
  try {
    const runs = {} as Record<Build, Run>;
    const targets = {} as Record<Build, { pid: number; editorOut: string; quietUrl: string }>;
    for (const [i, build] of BUILDS.entries()) {
      const service = await startBenchService(editorBin, benchPorts(offset + i), build === 'before' ? { checkout: baseline.dir } : {});
      services.push(service);
      const made: Record<string, { id: string; port: number; manifest: string }> = {};
      for (const name of ['noisy', 'quiet']) {
        const { id, port } = await service.call('POST', '/servers', { name });
        await service.call('POST', `/servers/${id}/start`);
        const { manifest } = await service.call('GET', `/servers/${id}`);
        made[name] = { id, port, manifest };
      }
      const editorOut = path.join(service.dataDir, 'logs', made.noisy.manifest, 'editor.out');
      targets[build] = { pid: service.pid, editorOut, quietUrl: `${service.url}/vscode/${made.quiet.port}/` };
      await loopLag(service.url); // loads prom-client, so later scrapes cost what they cost

      // CPU and loop delay with no proxy load: silent, noisy, noisy with a stream client.
      runs[build] = async (rate, client) => {
        const stream = client ? await streamClient(`${service.url.replace('http', 'ws')}/ws/logs?tail=0`) : undefined;
        await loopLag(service.url);
        const before = cpuUs(service.pid);
        const began = performance.now();
        const written = await writePhase(editorOut, rate, phaseSec);
        const cpu = cpuUs(service.pid) - before;
        const wallMs = performance.now() - began;
        const lag = await loopLag(service.url);
        stream?.close();
        return { written, cpuUs: cpu, wallMs, lag, frames: stream?.frames(), reportedDropped: stream?.reportedDropped() };
      };
    }
    const costs = await costPhases(runs, rounds, linesPerSec);

    // The quiet editor's proxy throughput in each build: the noisy editor off; on; and, as the
    // floor, the same writer appending to a file no service follows (what the noisy process
    // itself takes from the machine's cores), measured on the after build. The order turns each round.
    for (const build of BUILDS) await autocannon({ url: targets[build].quietUrl, connections: 32, duration: 2 });
    const elsewhere = path.join(services[1].root, 'not-followed.out');
    const conditions = ['before off', 'before on', 'after off', 'after on', 'floor'] as const;
    type Condition = (typeof conditions)[number];
    const proxy = Object.fromEntries(conditions.map((c) => [c, { rps: [] as number[], p99: [] as number[], cpu: [] as number[], one: [] as number[] }])) as Record<Condition, { rps: number[]; p99: number[]; cpu: number[]; one: number[] }>;
    for (let r = 0; r < proxyRounds; r++) {
      for (let k = 0; k < conditions.length; k++) {
        const condition = conditions[(k + r * 2) % conditions.length];
        const target = targets[condition.startsWith('before') ? 'before' : 'after'];
        const file = condition.endsWith('on') ? target.editorOut : condition === 'floor' ? elsewhere : undefined;
        const writer = file ? startWriter(file, linesPerSec, PROBE_SEC + phaseSec + 2) : undefined;
        if (writer) await sleep(300);
        // One request at a time first, then the load.
        const probe = startProbe(target.quietUrl);
        await sleep(PROBE_SEC * 1000);
        proxy[condition].one.push(...(await probe.stop()));
        const before = cpuUs(target.pid);
        const result = await autocannon({ url: target.quietUrl, connections: 32, duration: phaseSec });
        const cpu = cpuUs(target.pid) - before;
        if (result.errors > 0 || result.non2xx > 0) throw new Error(`proxy load: ${result.errors} errors, ${result.non2xx} non-2xx`);
        writer?.stop();
        await writer?.done;
        proxy[condition].rps.push(result.requests.average);
        proxy[condition].p99.push(result.latency.p99);
        proxy[condition].cpu.push(cpu / result.requests.total);
        await sleep(SETTLE_MS);
      }
    }
    const rps = (c: Condition) => median(proxy[c].rps);
    const each = <T>(figure: (c: Condition) => T) => Object.fromEntries(conditions.map((c) => [c, figure(c)]));
    return {
      baseline: BASELINE,
      lines_per_sec: linesPerSec,
      phase_sec: phaseSec,
      rounds,
      ...costs,
      proxy_to_quiet_editor: {
        rounds: proxyRounds,
        req_per_sec: each((c) => Math.round(rps(c))),
        // The quiet editor's throughput with the noisy one on ÷ off, in each build.
        on_vs_off: { before: round(rps('before on') / rps('before off'), 3), after: round(rps('after on') / rps('after off'), 3) },
        // One request at a time (about 150 a second): what a person on another editor waits.
        one_at_a_time_ms: each((c) => ({ p50: round(percentile(proxy[c].one, 50), 2), p99: round(percentile(proxy[c].one, 99), 2) })),
        p99_ms: each((c) => median(proxy[c].p99)),
        service_cpu_us_per_request: each((c) => round(median(proxy[c].cpu), 1)),
        req_per_sec_rounds: each((c) => proxy[c].rps.map(Math.round)),
      },
    };
  } finally {
    for (const service of services) await service.close();
    baseline.remove();
  }
}

async function main(): Promise<void> {
  const phaseSec = Number(process.argv[2]) || 5;
  const which = process.argv[3];
  // BENCH_QUICK=1: one round of each.
  const quick = process.env.BENCH_QUICK === '1' ? { rounds: 1, proxyRounds: 1 } : {};
  if (which !== 'service') console.log(JSON.stringify({ pipeline: await benchLogCostPipeline({ phaseSec, ...quick }) }, null, 2));
  if (which !== 'pipeline') {
    const { STUB_EDITOR } = await import('./harness.ts');
    console.log(JSON.stringify({ service: await benchLogCostThroughService(STUB_EDITOR, 16, { phaseSec, ...quick }) }, null, 2));
  }
}

if (process.argv[1] === SELF) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}

// Runs the real service as a separate process for the benchmarks, and small measuring helpers.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { promises as fs, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { stopAllEditors } from '../src/runtime/processes.ts';
import { DataLayout } from '../src/workspace/layout.ts';


// Benchmarks measure what `npm start` runs: the compiled service, by default of this checkout.
export const ROOT = new URL('..', import.meta.url).pathname;

/**
 * The exact environment and node arguments of `npm start` in the checkout at `root` (heap and
 * malloc limits included), so the figures are its figures: `VAR=value … exec node ARGS…`.
 */
function startCommand(root: string): { env: Record<string, string>; args: string[] } {
  const words = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).scripts.start as string).split(/\s+/);
  const nodeAt = words.indexOf('node');
  return {
    env: Object.fromEntries(words.slice(0, nodeAt).filter((w) => w.includes('=')).map((w) => w.split('=') as [string, string])),
    // BENCH_NODE_ARGS: extra node or V8 flags ahead of the script, to compare a flag side by side.
    args: [...(process.env.BENCH_NODE_ARGS?.split(/\s+/).filter(Boolean) ?? []), ...words.slice(nodeAt + 1).map((w) => (w === 'dist/main.js' && process.env.BENCH_MAIN) || w)],
  };
}
const START = startCommand(ROOT);
const built = new Set<string>();

/** Compiles the service of the checkout at `root` into its dist/ (once a run per checkout). */
export function buildService(root = ROOT): void {
  if (built.has(root)) return;
  execFileSync(join(root, 'node_modules', '.bin', 'tsc'), ['-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
  built.add(root);
}
export const STUB_EDITOR = new URL('../test/fixtures/stub-editor.mjs', import.meta.url).pathname;

export interface BenchService {
  url: string;
  pid: number;
  root: string;
  dataDir: string;
  child: ChildProcess;
  rssMb(): number;
  call(method: string, path: string, body?: unknown): Promise<any>;
  /** SIGTERM and wait for the exit, as a redeploy does: editors, manifests and data are left (close() removes them). */
  terminate(): Promise<void>;
  close(): Promise<void>;
}

/**
 * `env`: variables beside the bench's own (DEVBOX_METRICS=0 …); `editor`: config keys of `editor`
 * beside its own; `config`: other top-level config sections (`runtime` …); `checkout`: the
 * checkout whose service runs (default this one), built first.
 */
export async function startBenchService(
  editorBin: string, ports: { min: number; max: number },
  extra: { env?: Record<string, string>; editor?: Record<string, unknown>; config?: Record<string, unknown>; checkout?: string; root?: string } = {},
): Promise<BenchService> {
  const checkout = extra.checkout ?? ROOT;
  buildService(checkout);
  const start = startCommand(checkout);
  // `root`: the folders of a service stopped before (its manifests and data), to time a restart.
  const root = extra.root ?? await fs.mkdtemp(join(tmpdir(), 'devbox-bench-'));
  const configFile = join(root, 'config.yaml');
  await fs.writeFile(configFile, stringify({ ...extra.config, ports, editor: { startTimeoutSeconds: 60, stopGraceSeconds: 5, ...extra.editor } }));
  const dataDir = join(root, 'data');
  const child = spawn(process.execPath, start.args, {
    cwd: checkout,
    env: {
      ...process.env,
      ...start.env,
      DEVBOX_HOST: '127.0.0.1',
      DEVBOX_PORT: '0',
      DEVBOX_MANIFESTS_DIR: join(root, 'manifests'),
      DEVBOX_DATA_DIR: dataDir,
      DEVBOX_CONFIG: configFile,
      DEVBOX_EDITOR_BIN: editorBin,
      ...extra.env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk) => {
      out += chunk;
      const match = /serving on (http:\/\/\S+)/.exec(out);
      if (match) resolve(match[1]);
    });
    child.once('exit', (code) => reject(new Error(`service exited with ${code}: ${out}`)));
  }).catch(async (err) => {
    await fs.rm(root, { recursive: true, force: true });
    throw err;
  });
  child.stdout!.resume();
  let closing: Promise<void> | undefined;
  const terminate = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  };
  const service: BenchService = {
    url, root, dataDir, child,
    pid: child.pid!,
    rssMb: () => rssMb(child.pid!),
    call: (method, path, body) => call(url, method, path, body),
    terminate,
    close: () => (closing ??= (async () => {
      await terminate();
      await stopAllEditors(new DataLayout(dataDir).editorsDir, 2000);
      await fs.rm(root, { recursive: true, force: true });
      running.delete(service);
    })()),
  };
  running.add(service);
  return service;
}

const running = new Set<BenchService>();
/** Closes every service still running, with its editors: for a run that is interrupted. */
export async function closeBenchServices(): Promise<void> {
  await Promise.allSettled([...running].map((service) => service.close()));
}

export async function call(base: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(base + path, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json();
  if (res.status >= 400) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/**
 * The floor for the service's memory: resident MB of bare Node.js with `npm start`'s flags and
 * environment, serving an empty HTTP server on loopback (read once it has idled for a second).
 */
export async function bareNodeRssMb(): Promise<number> {
  const flags = START.args.filter((arg) => arg.startsWith('-'));
  const script = "require('node:http').createServer((q, s) => s.end()).listen(0, '127.0.0.1', () => console.log('listening'))";
  const child = spawn(process.execPath, [...flags, '-e', script], { env: { ...process.env, ...START.env }, stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    await new Promise((resolve, reject) => {
      child.stdout!.once('data', resolve);
      child.once('exit', (code) => reject(new Error(`bare node exited with ${code}`)));
    });
    await sleep(1000);
    return rssMb(child.pid!);
  } finally {
    child.kill();
  }
}

/**
 * A process's memory beyond RSS, in MB, from /proc/<pid>/smaps_rollup: PSS (its pages, shared ones
 * divided among the processes mapping them) and USS (its private pages: what ending it would free).
 * The node binary's pages are shared with every editor running the same binary, so RSS counts
 * them in full and USS not at all.
 */
export function sharedMemoryMb(pid: number): { pss: number; uss: number } {
  const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(rollup)?.[1] ?? NaN);
  return { pss: kb('Pss') / 1024, uss: (kb('Private_Clean') + kb('Private_Dirty')) / 1024 };
}

/** Resident memory of a process, in MB, from /proc. */
export function rssMb(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) / 1024 : NaN;
}

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

export const median = (values: number[]) => percentile(values, 50);
export const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits;
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A port range for one benchmark run, away from the default 8010–8100. */
export function benchPorts(offset: number, size = 200): { min: number; max: number } {
  const min = 30_000 + offset * 200;
  return { min, max: min + size - 1 };
}

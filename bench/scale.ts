// `npm run bench -- scale`: what the service costs at the size a team or a course runs. N manifests
// (stopped) land in the manifests folder at once, as a GitOps sync lands them; then `running` of
// them are started. Measured at each N, so the slope shows: landed → every server listed with its
// status, CPU at rest, RSS, read latencies beside the floor (the same bytes sent from a prepared
// buffer by bare Node.js), and a restart (SIGTERM, start again on the same folders): every server
// known again, the running editors adopted, none restarted.
import { spawn } from 'node:child_process';
import { promises as fs, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { round, sleep, startBenchService, type BenchService } from './harness.ts';
import { measureDashboard } from './dashboard-scale.ts';
import { timeInFreshClient } from './latency-client.ts';

const TICKS_PER_SECOND = 100;

/** The service's CPU seconds so far (user + system), from /proc. */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

// The dashboard's measure finds servers by these names (bench/dashboard-scale.ts).
function manifest(name: string): string {
  return `apiVersion: devbox.dev/v1alpha1\nkind: EditorServer\nmetadata:\n  name: ${name}\nspec:\n  running: false\n`;
}

interface Listed { id: string; name: string; manifest: string; status: string; pid: number | null; port: number | null }

/** The main thread's voluntary context switches so far: how often it went to sleep and woke. */
function wakeUps(pid: number): number {
  return Number(/voluntary_ctxt_switches:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/task/${pid}/status`, 'utf8'))?.[1] ?? 0);
}

/** The service's JavaScript heap in use, in MB, from its /metrics. */
async function heapUsedMb(service: BenchService): Promise<number> {
  const text = await (await fetch(`${service.url}/metrics`)).text();
  const bytes = Number(/^nodejs_heap_size_used_bytes\s+(\S+)/m.exec(text)?.[1] ?? 0);
  return Math.round(bytes / 2 ** 20);
}

/** CPU at rest of bare Node.js doing a supervisor's duty for the same editors with a heap as big (bench/rest-floor.ts). */
async function restFloor(heapMb: number, windowS: number, editors: Array<{ pid: number; port: number; out: string; err: string }>) {
  const child = spawn(process.execPath, [join(import.meta.dirname, 'rest-floor.ts'), String(heapMb), String(windowS), JSON.stringify(editors)], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (chunk) => (out += chunk));
  await new Promise((resolve) => child.once('exit', resolve));
  return JSON.parse(out.trim().split('\n').pop()!) as { cpu_percent_of_core: number; heap_mb: number; wake_ups_per_second: number };
}

/** Polls GET /servers until `done` holds for the list; the seconds it took from `since` (performance.now()). */
async function until(service: BenchService, since: number, done: (list: Listed[]) => boolean, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const list = await service.call('GET', '/servers').catch(() => undefined) as Listed[] | undefined;
    if (list && done(list)) return round((performance.now() - since) / 1000, 1);
    if (Date.now() > deadline) throw new Error(`not reached in ${timeoutMs / 1000} s (${list?.length ?? 'no'} servers listed)`);
    await sleep(250);
  }
}

/** p95 of GETs of the bytes at `url`, sent by bare Node.js from one prepared buffer, in a child of its own. */
async function floorOf(body: Buffer, requests: number, warmup: number) {
  const file = join(process.env.TMPDIR ?? '/tmp', `devbox-bench-floor-${process.pid}.json`);
  await fs.writeFile(file, body);
  const script = `const b=require('node:fs').readFileSync(${JSON.stringify(file)});` +
    "require('node:http').createServer((q,s)=>{s.writeHead(200,{'content-type':'application/json','content-length':b.length});s.end(b)})" +
    ".listen(0,'127.0.0.1',function(){console.log(this.address().port)})";
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const port = await new Promise<string>((resolve) => child.stdout!.once('data', (d) => resolve(String(d).trim())));
    return await timeInFreshClient('gets', `http://127.0.0.1:${port}/`, requests, warmup);
  } finally {
    child.kill();
    await fs.rm(file, { force: true });
  }
}

/** One size: `total` manifests landed at once, `running` of them started. */
export async function benchScaleAt(bin: string, total: number, running: number, quick: boolean, offset: number) {
  const min = 20_000 + offset * 100;
  const ports = { min, max: min + total + 500 };
  let service = await startBenchService(bin, ports, { config: { capacity: { maxRunning: running + 10 } } });
  const root = service.root;
  try {
    const manifests = join(root, 'manifests');
    const staging = join(root, 'staging');
    await fs.mkdir(staging);
    const names = Array.from({ length: total }, (_, i) => `seat-${String(i).padStart(5, '0')}`);
    for (const name of names) await fs.writeFile(join(staging, `${name}.yaml`), manifest(name));
    // Landed as a checkout lands them: each file renamed into the folder the service watches.
    const landed = performance.now();
    const cpuLanded = cpuSeconds(service.pid);
    for (const name of names) await fs.rename(join(staging, `${name}.yaml`), join(manifests, `${name}.yaml`));
    const listedS = await until(service, landed, (list) => list.length === total && list.every((s) => s.status === 'stopped'), 300_000);
    // What the landing cost the service, on all its threads (its JavaScript thread, the file
    // system's thread pool, the garbage collector), the kernel's work for it included.
    const landedCpuS = round(cpuSeconds(service.pid) - cpuLanded, 1);
    const rssDeclared = round(service.rssMb(), 1);

    const ids = (await service.call('GET', '/servers') as Listed[]).slice(0, running).map((s) => s.id);
    const asked = performance.now();
    for (let i = 0; i < ids.length; i += 10) await Promise.all(ids.slice(i, i + 10).map((id) => service.call('POST', `/servers/${id}/start`)));
    const runningS = await until(service, asked, (list) => list.filter((s) => s.status === 'running').length === running, 300_000);

    // At rest: nothing asked of it, the editors running, every server known.
    await sleep(quick ? 2000 : 5000);
    const windowS = quick ? 10 : 30;
    const cpuBefore = cpuSeconds(service.pid);
    const wokeBefore = wakeUps(service.pid);
    await sleep(windowS * 1000);
    const restCpuPercent = round(((cpuSeconds(service.pid) - cpuBefore) / windowS) * 100, 2);
    const restWakeUps = round((wakeUps(service.pid) - wokeBefore) / windowS, 1);
    const rssAtRest = round(service.rssMb(), 1);
    // The floor, right after and on the same editors (the service keeps running, at rest, meanwhile:
    // its cost is in neither figure twice, as each counts only its own process).
    const heapMb = await heapUsedMb(service);
    const editors = (await service.call('GET', '/servers') as Listed[]).filter((s) => s.pid !== null && s.port !== null)
      .map((s) => ({ pid: s.pid!, port: s.port!, out: join(root, 'data', 'logs', s.name, 'editor.out'), err: join(root, 'data', 'logs', s.name, 'editor.err') }));
    const floorRest = await restFloor(heapMb, windowS, editors);

    const listBytes = Buffer.from(await (await fetch(`${service.url}/servers`)).arrayBuffer());
    // At least 200, so the p95 is not the third slowest of a handful (the floor's own p95 moved 6-11 ms between runs of 50).
    const fullRequests = quick ? 20 : Math.max(200, Math.round(200_000 / total));
    const full = await timeInFreshClient('gets', `${service.url}/servers`, fullRequests, Math.ceil(fullRequests / 4));
    const floor = await floorOf(listBytes, fullRequests, Math.ceil(fullRequests / 4));
    const requests = quick ? 300 : 2000;
    const page = await timeInFreshClient('gets', `${service.url}/servers?limit=100`, requests);
    const one = await timeInFreshClient('gets', `${service.url}/servers/${ids[0]}`, requests);
    const health = await timeInFreshClient('gets', `${service.url}/health`, requests);

    // The dashboard in Chromium at this size (BENCH_SCALE_BROWSER=0 leaves it out).
    const dashboard = process.env.BENCH_SCALE_BROWSER === '0' ? undefined : await measureDashboard(service, total, quick);

    const pidsBefore = new Map((await service.call('GET', '/servers') as Listed[]).filter((s) => s.pid !== null).map((s) => [s.id, s.pid]));
    await service.terminate();
    const restarted = performance.now();
    service = await startBenchService(bin, ports, { root, config: { capacity: { maxRunning: running + 10 } } });
    const knownS = await until(service, restarted, (list) => list.length === total && list.filter((s) => s.status === 'running').length === running, 120_000);
    const after = await service.call('GET', '/servers') as Listed[];
    const restartedEditors = after.filter((s) => pidsBefore.has(s.id) && pidsBefore.get(s.id) !== s.pid).length;

    return {
      servers: total,
      running_editors: running,
      landed_to_listed_s: listedS,
      landed_service_cpu_s: landedCpuS,
      start_running_s: runningS,
      rest_cpu_percent_of_core: restCpuPercent,
      rest_window_s: windowS,
      rest_wake_ups_per_second: restWakeUps,
      rest_heap_used_mb: heapMb,
      rest_floor: floorRest,
      rest_cpu_over_floor: round(restCpuPercent / Math.max(0.01, floorRest.cpu_percent_of_core), 2),
      rss_declared_mb: rssDeclared,
      rss_at_rest_mb: rssAtRest,
      list_bytes: listBytes.length,
      list_full: full,
      list_full_floor: floor,
      list_full_p95_over_floor: round(full.p95_ms / floor.p95_ms, 2),
      list_page_100: page,
      one_server: one,
      health,
      restart_to_known_s: knownS,
      editors_restarted_by_restart: restartedEditors,
      ...(dashboard ? { dashboard } : {}),
    };
  } finally {
    await service.close();
  }
}

/** The process runtime at each size, smallest first, so the slope shows. */
export async function benchScale(bin: string, quick: boolean, offset: number) {
  const sizes = quick ? [1000] : (process.env.BENCH_SCALE_SIZES ?? '1000,10000').split(',').map(Number);
  const running = quick ? 20 : 100;
  const results: Record<string, unknown> = {};
  for (const size of sizes) results[`${size}_declared`] = await benchScaleAt(bin, size, running, quick, offset);
  return results;
}

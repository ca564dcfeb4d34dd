// Benchmarks of the controller core: start latency against a direct spawn, GET /servers with
// 30 running editors, and the service's memory over a soak of list, start and stop calls.
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkHealth } from '../src/runtime/health.ts';
import { stopProcessGroup } from '../src/core/process-group.ts';
import { editorArguments } from '../src/runtime/processes.ts';
import { identityOf } from '../src/core/procfs.ts';
import { freePort } from '../test/helpers/net.ts';
import { bareNodeRssMb, benchPorts, sharedMemoryMb, median, round, sleep, startBenchService, type BenchService } from './harness.ts';
import { timeInFreshClient } from './latency-client.ts';
import { cpuUs } from './proxy.ts';

/** Spawns the editor the way the service does and times spawn → first 200 from /healthz. */
async function directStart(bin: string): Promise<number> {
  const dir = await fs.mkdtemp(join(tmpdir(), 'devbox-direct-'));
  const port = await freePort();
  const spec = {
    name: 'direct', port,
    workspacePath: dir,
    userDataDir: join(dir, 'user-data'),
    extensionsDir: join(dir, 'extensions'),
    configPath: join(dir, 'config.yaml'),
    stdoutPath: join(dir, 'out.log'),
    stderrPath: join(dir, 'err.log'),
  };
  await fs.writeFile(spec.configPath, 'auth: none\n');
  const started = performance.now();
  const child = spawn(bin, editorArguments(spec), { detached: true, stdio: 'ignore', cwd: dir });
  // Same polling interval as the controller's probe.
  while (!(await checkHealth(port, 1000)).ok) await sleep(10);
  const elapsed = performance.now() - started;
  const identity = identityOf(child.pid!)!;
  await stopProcessGroup(identity, 5000);
  await fs.rm(dir, { recursive: true, force: true });
  return elapsed;
}

async function serviceStart(service: BenchService, id: string): Promise<number> {
  const started = performance.now();
  const res = await service.call('POST', `/servers/${id}/start`);
  const elapsed = performance.now() - started;
  if (res.data.status !== 'running') throw new Error(`start answered ${JSON.stringify(res)}`);
  if (!(await checkHealth((await service.call('GET', `/servers/${id}`)).port)).ok) throw new Error('editor not healthy after start');
  await service.call('POST', `/servers/${id}/stop`);
  return elapsed;
}

/**
 * Start latency through the service against a direct spawn, interleaved so noise hits both.
 * `checkout`: the checkout whose service runs (default this one); likewise below.
 */
export async function benchStartLatency(bin: string, label: string, rounds: number, offset: number, checkout?: string) {
  const service = await startBenchService(bin, benchPorts(offset), { checkout });
  try {
    const { id } = await service.call('POST', '/servers', { name: `latency ${label}` });
    await serviceStart(service, id); // warm-up: folders, extensions, first spawn
    await directStart(bin);
    const direct: number[] = [];
    const via: number[] = [];
    for (let i = 0; i < rounds; i++) {
      direct.push(await directStart(bin));
      via.push(await serviceStart(service, id));
    }
    return {
      editor: label,
      rounds,
      direct_median_ms: round(median(direct)),
      service_median_ms: round(median(via)),
      ratio: round(median(via) / median(direct), 3),
    };
  } finally {
    await service.close();
  }
}

/** Creates and starts `count` editors, then lets the background sampler fill in CPU and memory. */
export async function startEditors(service: BenchService, count: number, label: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) ids.push((await service.call('POST', '/servers', { name: `${label} ${i}` })).id);
  await Promise.all(ids.map((id) => service.call('POST', `/servers/${id}/start`)));
  await sleep(3000);
  return ids;
}

/**
 * GET /servers (and GET /servers/{id}) latency with `count` running editors among `total`
 * servers (the rest created and left stopped), keep-alive, sequential requests.
 */
export async function benchList(bin: string, count: number, requests: number, offset: number, total = count, checkout?: string) {
  const service = await startBenchService(bin, benchPorts(offset, Math.max(200, total + 20)), { checkout });
  try {
    const ids = await startEditors(service, count, 'list');
    for (let i = count; i < total; i++) await service.call('POST', '/servers', { name: `list stopped ${i}` });
    // Each timed from a fresh client process (bench/latency-client.ts).
    const list = await timeInFreshClient('gets', `${service.url}/servers`, requests);
    const one = await timeInFreshClient('gets', `${service.url}/servers/${ids[0]}`, requests);
    const { p99_ms: _, ...watch } = await timeInFreshClient('watch', `${service.url}/servers?watch=1`, Math.min(requests, 500));
    const servers = await service.call('GET', '/servers');
    return {
      servers: servers.length,
      running_editors: servers.filter((s: { status: string }) => s.status === 'running').length,
      requests,
      ...list,
      one_server: one,
      watch_list_until_synced: watch,
      service_rss_mb: round(service.rssMb(), 1),
    };
  } finally {
    await service.close();
  }
}

/**
 * Service memory with `count` running editors, then over `minutes` of repeated list, start and
 * stop calls: RSS sampled each minute.
 */
/** The service's RSS once its CPU use falls under 2 % of a core over a 2 s window (at most 30 s of waiting). */
async function rssWhenQuiet(service: BenchService): Promise<number> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const before = cpuUs(service.pid);
    await sleep(2000);
    const percent = (cpuUs(service.pid) - before) / 2e6 * 100;
    if (percent < 2 || Date.now() > deadline) return service.rssMb();
  }
}

export async function benchMemorySoak(bin: string, count: number, minutes: number, offset: number, checkout?: string) {
  const service = await startBenchService(bin, benchPorts(offset), { checkout });
  try {
    const ids = await startEditors(service, count, 'soak');
    const atStart = service.rssMb();
    // At rest: once the service has used under 2 % of a core for 2 s in a row (the starts' work
    // done, their garbage collected), at most 30 s after the last start.
    const atRest = await rssWhenQuiet(service);
    const shared = sharedMemoryMb(service.pid);
    const bareNode = await bareNodeRssMb();
    const samples: number[] = [round(atStart, 1)];
    // The JavaScript heap in use, from the service's GET /health: tells a leak from a heap that only grew its reserve.
    const heapUsed = async () => (await service.call('GET', '/health')).memory_mb.heap_used as number;
    const heapSamples: number[] = [await heapUsed()];
    const deadline = Date.now() + minutes * 60_000;
    let nextSample = Date.now() + 60_000;
    let cycles = 0;
    const churn = ids.slice(0, 5);
    while (Date.now() < deadline) {
      for (let i = 0; i < 20; i++) await service.call('GET', '/servers');
      const id = churn[cycles % churn.length];
      await service.call('POST', `/servers/${id}/stop`);
      await service.call('POST', `/servers/${id}/start`);
      cycles++;
      if (Date.now() >= nextSample) {
        samples.push(round(service.rssMb(), 1));
        heapSamples.push(await heapUsed());
        nextSample += 60_000;
      }
    }
    const atEnd = service.rssMb();
    samples.push(round(atEnd, 1));
    heapSamples.push(await heapUsed());
    return {
      running_editors: count,
      minutes,
      cycles,
      // The first minute fills the bounded log buffers of the servers being cycled.
      growth_after_first_minute_mb: round(atEnd - samples[Math.min(1, samples.length - 1)], 1),
      // Flat: what the second half of the soak added (the first fills buffers and warms the heap).
      growth_second_half_mb: round(atEnd - samples[Math.floor((samples.length - 1) / 2)], 1),
      // Right after the 30th start answered (the starts' transient allocations included).
      rss_start_mb: round(atStart, 1),
      rss_rest_mb: round(atRest, 1),
      // The service's share with the binary's pages divided among the processes running it (PSS),
      // and its private memory (USS); the stub editors run the same node binary.
      pss_start_mb: round(shared.pss, 1),
      uss_start_mb: round(shared.uss, 1),
      // The floor, measured in the same run: bare Node.js with the same flags, an idle HTTP server.
      bare_node_rss_mb: round(bareNode, 1),
      rss_end_mb: round(atEnd, 1),
      rss_max_mb: Math.max(...samples),
      rss_samples_mb: samples,
      heap_used_samples_mb: heapSamples,
    };
  } finally {
    await service.close();
  }
}

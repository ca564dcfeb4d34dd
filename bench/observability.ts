// What metrics and activity tracking cost: proxy throughput and start latency through a service
// with them (the defaults) against one without (DEVBOX_METRICS=0, DEVBOX_ACTIVITY_TRACKING=0 and
// no idle timeout: no proxy observer, no /metrics, no heartbeat probes), both running at once and
// measured in alternation, so drift and noise hit both sides alike.
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';
import { benchPorts, median, round, startBenchService, type BenchService } from './harness.ts';

const WITHOUT = { env: { DEVBOX_METRICS: '0', DEVBOX_ACTIVITY_TRACKING: '0' }, editor: { idleTimeoutSeconds: 0 } };

interface Side {
  service: BenchService;
  id: string;
  url: string;
  rps: number[];
  /** The service's CPU time per proxied request, in µs. */
  cpuUs: number[];
  startMs: number[];
}

/** CPU time (user and system) a process has used, in seconds, from /proc. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime, fields 14 and 15 of the line, in clock ticks (100 a second on Linux).
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function side(service: BenchService, label: string, realEditor: boolean): Promise<Side> {
  const { id, port, workspace_path } = await service.call('POST', '/servers', { name: `observability ${label}` });
  await service.call('POST', `/servers/${id}/start`);
  const path = realEditor ? `/?folder=${encodeURIComponent(workspace_path)}` : '/';
  return { service, id, url: `${service.url}/vscode/${port}${path}`, rps: [], cpuUs: [], startMs: [] };
}

async function throughput(url: string, seconds: number): Promise<{ rps: number; requests: number }> {
  const result = await autocannon({ url, connections: 32, duration: seconds });
  if (result.errors > 0 || result.non2xx > 0) throw new Error(`${url}: ${result.errors} connection errors and ${result.non2xx} non-2xx answers`);
  return { rps: result.requests.average, requests: result.requests.total };
}

/** Throughput through the side's proxy, and the service's CPU time per request meanwhile. */
async function measure(s: Side, seconds: number): Promise<void> {
  const before = cpuSeconds(s.service.pid);
  const { rps, requests } = await throughput(s.url, seconds);
  s.rps.push(rps);
  s.cpuUs.push(((cpuSeconds(s.service.pid) - before) / requests) * 1e6);
}

/** POST /start of a stopped server until it answers running, then stops it again. */
async function timedStart(s: Side): Promise<number> {
  const began = performance.now();
  const res = await s.service.call('POST', `/servers/${s.id}/start`);
  const elapsed = performance.now() - began;
  if (res.data.status !== 'running') throw new Error(`start answered ${JSON.stringify(res)}`);
  await s.service.call('POST', `/servers/${s.id}/stop`);
  return elapsed;
}

/** Requests the proxy counted for every server of a service, from its /metrics. */
async function countedRequests(service: BenchService): Promise<number> {
  const text = await (await fetch(`${service.url}/metrics`)).text();
  return [...text.matchAll(/^devbox_server_proxy_requests_total\{[^}]*\} (\S+)$/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
}

/** A service with or without, one editor running on it. */
async function startSide(bin: string, label: 'with' | 'without', realEditor: boolean, offset: number): Promise<Side> {
  const service = await startBenchService(bin, benchPorts(offset), label === 'with' ? {} : WITHOUT);
  return side(service, label, realEditor);
}

/**
 * One page: throughput with and without, in `rounds` rounds. Each round starts a fresh pair of
 * services (one process can run faster than another of the same build by 10-20 % on two shared
 * cores, whatever it runs), warms both up and measures them one after the other, the order
 * alternating. With `startRounds`, start latency on the last pair too.
 */
async function compare(bin: string, label: string, realEditor: boolean, rounds: number, seconds: number, startRounds: number, offset: number) {
  const rps = { with: [] as number[], without: [] as number[] };
  const cpu = { with: [] as number[], without: [] as number[] };
  const result: Record<string, unknown> = { page: label, rounds, seconds_each: seconds };
  for (let i = 0; i < rounds; i++) {
    const sides = [await startSide(bin, 'with', realEditor, offset), await startSide(bin, 'without', realEditor, offset + 1)];
    const [withIt, without] = sides;
    try {
      if ((await fetch(`${without.service.url}/metrics`)).status !== 404) throw new Error('the baseline service serves /metrics: DEVBOX_METRICS=0 was not applied');
      for (const s of sides) await throughput(s.url, Math.min(2, seconds)); // warm-up: JIT, pools, the editor's caches
      for (const s of i % 2 === 0 ? sides : [...sides].reverse()) await measure(s, seconds);
      rps.with.push(withIt.rps[0]);
      rps.without.push(without.rps[0]);
      cpu.with.push(withIt.cpuUs[0]);
      cpu.without.push(without.cpuUs[0]);
      // What the proxy counted: every request of the warm-up and the measurement, within autocannon's rounding.
      const counted = await countedRequests(withIt.service);
      if (counted < withIt.rps[0] * seconds * 0.9) throw new Error(`/metrics counted ${counted} proxied requests of about ${Math.round(withIt.rps[0] * seconds)} sent`);
      if (i < rounds - 1) continue;
      if (startRounds > 0) {
        for (const s of sides) await s.service.call('POST', `/servers/${s.id}/stop`);
        for (const s of sides) await timedStart(s); // warm-up
        for (let j = 0; j < startRounds; j++) {
          for (const s of j % 2 === 0 ? sides : [...sides].reverse()) s.startMs.push(await timedStart(s));
        }
        Object.assign(result, {
          start_rounds: startRounds,
          with_start_median_ms: round(median(withIt.startMs)),
          without_start_median_ms: round(median(without.startMs)),
          start_ratio: round(median(withIt.startMs) / median(without.startMs), 3),
          start_target: 'no measurable difference',
        });
      }
      // What one scrape costs, with one server and the process's metrics: median of 20.
      const scrapes: number[] = [];
      for (let j = 0; j < 20; j++) {
        const began = performance.now();
        await countedRequests(withIt.service);
        scrapes.push(performance.now() - began);
      }
      result.scrape_median_ms = round(median(scrapes));
    } finally {
      for (const s of sides) await s.service.close();
    }
  }
  return {
    ...result,
    with_requests_per_sec: rps.with.map(Math.round),
    without_requests_per_sec: rps.without.map(Math.round),
    // Each round's pair ran side by side: the median of their ratios.
    round_ratios: rps.with.map((w, i) => round(w / rps.without[i], 3)),
    throughput_ratio: round(median(rps.with.map((w, i) => w / rps.without[i])), 3),
    throughput_target: '>= 0.95',
    // Less noisy than throughput on shared cores: the service's own CPU time per proxied request.
    with_cpu_us_per_request: round(median(cpu.with), 1),
    without_cpu_us_per_request: round(median(cpu.without), 1),
    cpu_per_request_ratio: round(median(cpu.with.map((w, i) => w / cpu.without[i])), 3),
  };
}

/** The stub's tiny page (the proxy's own cost at its most visible, with start latency) and code-server's workbench page. */
export async function benchObservability(realBin: string, stubBin: string, quick: boolean, offset: number) {
  return {
    stub: await compare(stubBin, 'stub editor page', false, quick ? 6 : 12, quick ? 3 : 8, quick ? 8 : 20, offset),
    code_server: await compare(realBin, 'code-server workbench page', true, quick ? 4 : 8, quick ? 3 : 8, 0, offset + 2),
  };
}

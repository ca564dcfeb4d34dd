// The client side of the list and watch latency benchmarks, run in a fresh process of its own:
// by the time the list section runs, the bench's process holds the heap of the sections before
// it, and its own collections in the middle of a timed request would be counted as the service's
// latency (the watch stream's p95 at 300 servers read 4.5–7 ms after the start section, 1.2–2.1 ms
// from a fresh process).
import { fork } from 'node:child_process';
import { Agent, request } from 'node:http';
import { fileURLToPath } from 'node:url';
import { percentile, round } from './harness.ts';

type Kind = 'gets' | 'watch';
export interface Latency { p50_ms: number; p95_ms: number; p99_ms: number }

/** Times `requests` sequential requests of `url` in a fresh process: keep-alive GETs, or watch streams each on a new connection. */
export function timeInFreshClient(kind: Kind, url: string, requests: number, warmup = 200): Promise<Latency> {
  const child = fork(fileURLToPath(import.meta.url), [kind, url, String(requests), String(warmup)], { stdio: 'inherit' });
  return new Promise((resolve, reject) => {
    child.once('message', (latency) => resolve(latency as Latency));
    child.once('exit', (code) => reject(new Error(`latency client (${kind} ${url}) exited with ${code} before answering`)));
  });
}

const summary = (times: number[]): Latency => ({
  p50_ms: round(percentile(times, 50), 3),
  p95_ms: round(percentile(times, 95), 3),
  p99_ms: round(percentile(times, 99), 3),
});

/** Sequential keep-alive GETs: latency percentiles after a warm-up (200 unless told). */
async function timeGets(url: URL, requests: number, warmup = 200): Promise<Latency> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const once = () => new Promise<number>((resolve, reject) => {
    const started = performance.now();
    request(url, { agent }, (res) => {
      res.on('data', () => undefined);
      res.on('end', () => resolve(performance.now() - started));
    }).on('error', reject).end();
  });
  for (let i = 0; i < warmup; i++) await once();
  const times: number[] = [];
  for (let i = 0; i < requests; i++) times.push(await once());
  agent.destroy();
  return summary(times);
}

/** Watch streams opened one after another, each on a new connection: request → SYNCED read, the whole list before it. */
async function timeWatch(url: URL, requests: number): Promise<Latency> {
  const once = () => new Promise<number>((resolve, reject) => {
    const started = performance.now();
    const req = request(url, { agent: false }, (res) => {
      let tail = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        tail = (tail + chunk).slice(-64);
        if (!tail.includes('"type":"SYNCED"')) return;
        resolve(performance.now() - started);
        req.destroy();
      });
    });
    req.on('error', (error) => (req.destroyed ? undefined : reject(error))).end();
  });
  for (let i = 0; i < 20; i++) await once();
  const times: number[] = [];
  for (let i = 0; i < requests; i++) times.push(await once());
  return summary(times);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [kind, url, requests, warmup] = process.argv.slice(2) as [Kind, string, string, string];
  const timed = kind === 'watch' ? timeWatch(new URL(url), Number(requests)) : timeGets(new URL(url), Number(requests), Number(warmup));
  timed.then(
    (latency) => process.send!(latency, () => process.exit(0)),
    (error) => {
      console.error(error);
      process.exit(1);
    },
  );
}

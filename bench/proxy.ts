// Proxy benchmark: small-page throughput and WebSocket echo round trip, through the EditorProxy
// against direct to the editor, in one run.
//
//   node bench/proxy.ts [seconds] [--in-express] [--editor /path/to/code-server] [--compare /path/to/editor-proxy.ts]
//
// --compare runs a second service beside the first with the EditorProxy of another module (an
// older copy, say) and measures it in the same run: throughput, echo and service CPU per request.
// BENCH_SERVICE_EXEC_ARGV (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") is passed to the services.
//
// builds its own setup, each part in its own process as in production: the editor (a small
// stand-in, or the real code-server with --editor), the service (express app with the proxy),
// and this process generating the load. Bare byte relays (Node.js, and C when a compiler is
// present) are measured beside the proxy as the floor: what any extra process hop costs here.

import { execFileSync, fork, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import express from 'express';
import { WebSocket, WebSocketServer } from 'ws';
import { EditorProxy } from '../src/proxy/editor-proxy.ts';
import { freePort, opened } from '../test/helpers/net.ts';
import { median, round } from './harness.ts';

export interface BenchProxyOptions {
  /** e.g. http://127.0.0.1:8000/vscode/8012 */
  proxyBase: string;
  /** e.g. http://127.0.0.1:8012 */
  directBase: string;
  /** Per side. Default 10. */
  durationSec?: number;
  /** Keep-alive connections. Default 32. */
  connections?: number;
  /** The small page, relative to each base; also the WebSocket echo path. Default '/'. */
  path?: string;
  /** Round trips per side for the WebSocket echo; 0 skips it (the target must echo). Default 2000. */
  echoes?: number;
  /**
   * Byte relays to the same editor, by name (nodeRelay, cRelay): what any extra process hop costs
   * on this machine, the floor for a proxy. Their throughput and echo are measured beside the proxy.
   */
  relays?: Record<string, string>;
  /** The process serving proxyBase: its CPU time per proxied request is reported. */
  servicePid?: number;
  /** A second proxy to measure beside the first (figures prefixed `compare`), and its process. */
  compareBase?: string;
  comparePid?: number;
}

/** CPU time (user + system) of a process so far, in µs, from /proc. */
export function cpuUs(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of the whole line, in clock ticks (100 per second on Linux).
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100;
}

/** Throughput (requests/s) and WebSocket echo medians (µs), each with its proxy/direct ratio. */
export async function benchProxy(options: BenchProxyOptions): Promise<Record<string, number>> {
  const { durationSec = 10, connections = 32, path: page = '/', echoes = 2000 } = options;
  const load = async (base: string, pid?: number) => {
    const cpuBefore = pid ? cpuUs(pid) : 0;
    const result = await autocannon({ url: `${base}${page}`, connections, duration: durationSec });
    if (result.errors > 0 || result.non2xx > 0) {
      throw new Error(`${base}${page}: ${result.errors} connection errors and ${result.non2xx} non-2xx answers`);
    }
    const cpuPerRequestUs = pid ? round((cpuUs(pid) - cpuBefore) / result.requests.total, 1) : undefined;
    return { result, cpuPerRequestUs };
  };
  const { compareBase } = options;
  // Warm all up first (JIT, pools, the editor's caches), then measure one after the other.
  for (const base of [options.directBase, options.proxyBase, ...(compareBase ? [compareBase] : []), ...Object.values(options.relays ?? {})]) {
    await autocannon({ url: `${base}${page}`, connections, duration: Math.min(2, durationSec) });
  }
  const { result: direct } = await load(options.directBase);
  const proxied = await load(options.proxyBase, options.servicePid);
  const compared = compareBase ? await load(compareBase, options.comparePid) : undefined;
  const relays = Object.entries(options.relays ?? {});
  const relayed: Record<string, number> = {};
  for (const [name, base] of relays) relayed[name] = (await load(base)).result.requests.average;
  const figures: Record<string, number> = {
    directRequestsPerSec: Math.round(direct.requests.average),
    proxyRequestsPerSec: Math.round(proxied.result.requests.average),
    throughputRatio: round(proxied.result.requests.average / direct.requests.average),
    directLatencyP99Ms: direct.latency.p99,
    proxyLatencyP99Ms: proxied.result.latency.p99,
  };
  if (proxied.cpuPerRequestUs !== undefined) figures.serviceCpuPerRequestUs = proxied.cpuPerRequestUs;
  for (const [name, perSec] of Object.entries(relayed)) {
    Object.assign(figures, { [`${name}RequestsPerSec`]: Math.round(perSec), [`${name}ThroughputRatio`]: round(perSec / direct.requests.average) });
  }
  if (compared) {
    Object.assign(figures, {
      compareRequestsPerSec: Math.round(compared.result.requests.average),
      compareThroughputRatio: round(compared.result.requests.average / direct.requests.average),
      compareLatencyP99Ms: compared.result.latency.p99,
    });
    if (compared.cpuPerRequestUs !== undefined) figures.compareServiceCpuPerRequestUs = compared.cpuPerRequestUs;
  }
  if (echoes > 0) {
    const bases = [options.directBase, options.proxyBase, ...(compareBase ? [compareBase] : []), ...relays.map(([, base]) => base)];
    const medians = await echoMedians(bases.map((base) => `${base.replace(/^http/, 'ws')}${page}`), echoes);
    const [direct, proxy] = medians;
    Object.assign(figures, { directEchoMedianUs: round(direct), proxyEchoMedianUs: round(proxy), echoRatio: round(proxy / direct) });
    const compare = compareBase ? medians[2] : undefined;
    if (compare !== undefined) Object.assign(figures, { compareEchoMedianUs: round(compare), compareEchoRatio: round(compare / direct) });
    for (const [i, [name]] of relays.entries()) {
      const relay = medians[bases.length - relays.length + i];
      const suffix = name[0].toUpperCase() + name.slice(1);
      Object.assign(figures, {
        [`${name}EchoMedianUs`]: round(relay),
        [`${name}EchoRatio`]: round(relay / direct),
        [`proxyTo${suffix}EchoRatio`]: round(proxy / relay),
      });
      if (compare !== undefined) figures[`compareTo${suffix}EchoRatio`] = round(compare / relay);
    }
  }
  return figures;
}

/** Median round trip in µs of `count` sequential echoes per URL, interleaved in rounds so drift hits all alike. */
async function echoMedians(urls: string[], count: number): Promise<number[]> {
  const roundTrip = (socket: WebSocket, payload: string): Promise<number> =>
    new Promise((resolve) => {
      const start = process.hrtime.bigint();
      socket.once('message', () => resolve(Number(process.hrtime.bigint() - start) / 1000));
      socket.send(payload);
    });
  const sockets = await Promise.all(urls.map((url) => opened(new WebSocket(url))));
  const times: number[][] = urls.map(() => []);
  const payload = 'x'.repeat(64);
  for (const socket of sockets) for (let i = 0; i < 200; i++) await roundTrip(socket, payload); // warm-up
  for (let done = 0; done < count; done += 100) {
    for (const [side, socket] of sockets.entries()) {
      for (let i = 0; i < 100; i++) times[side].push(await roundTrip(socket, payload));
    }
  }
  for (const socket of sockets) socket.close();
  return times.map(median);
}

// --- The standalone setup -------------------------------------------------------------------

const PAGE = `<!doctype html><html><head><title>editor</title></head><body>${'<p>code-server</p>'.repeat(50)}</body></html>`;

const listen = async (server: net.Server): Promise<number> => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
};

/** The editor stand-in: a 1 KB page on every path and an echoing WebSocket. */
function serveTarget(): Promise<number> {
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html', 'Content-Length': Buffer.byteLength(PAGE) }).end(PAGE);
  });
  const wss = new WebSocketServer({ server });
  wss.on('connection', (ws) => ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary })));
  return listen(server);
}

/** A bare TCP relay: bytes in, bytes out, nothing parsed. */
function serveRelay(targetPort: number): Promise<number> {
  return listen(
    net.createServer((client) => {
      const upstream = net.connect(targetPort, '127.0.0.1');
      client.setNoDelay(true);
      upstream.setNoDelay(true);
      client.pipe(upstream).pipe(client);
      client.on('error', () => upstream.destroy());
      upstream.on('error', () => client.destroy());
    }),
  );
}

export interface FloorRelays {
  /** Name → base URL: nodeRelay (this file's byte relay in its own process), cRelay (when a C compiler is present). */
  relays: Record<string, string>;
  /** Why a relay is missing, if one is. */
  missing?: string;
  stop(): void;
}

/**
 * Starts the byte relays to 127.0.0.1:<editorPort> that show the floor for any proxy process:
 * the same relay in Node.js, and bench/floor-relay.c compiled with `cc` (skipped, with the reason
 * in `missing`, when no C compiler is present).
 */
export async function startFloorRelays(editorPort: number): Promise<FloorRelays> {
  const node = await startRole('relay', String(editorPort));
  const children: ChildProcess[] = [node.child];
  const relays: Record<string, string> = { nodeRelay: `http://127.0.0.1:${node.port}` };
  let missing: string | undefined;
  const binary = path.join(os.tmpdir(), `devbox-floor-relay-${process.pid}`);
  try {
    execFileSync('cc', ['-O2', '-o', binary, fileURLToPath(new URL('floor-relay.c', import.meta.url))], { stdio: 'pipe' });
    const c = spawn(binary, [String(editorPort)], { stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(c);
    const port = await new Promise<number>((resolve, reject) => {
      c.stdout!.once('data', (line) => resolve(Number(String(line).trim())));
      c.once('exit', (code) => reject(new Error(`floor-relay exited with ${code}`)));
    });
    relays.cRelay = `http://127.0.0.1:${port}`;
  } catch (err) {
    missing = `cRelay: ${(err as Error).message.split('\n')[0]}`;
  } finally {
    fs.rmSync(binary, { force: true });
  }
  return { relays, missing, stop: () => children.forEach((child) => child.kill()) };
}

/**
 * The service's HTTP server with the proxy in front of the express app: proxy paths never enter
 * express, whose per-request set-up (it swaps the prototypes of req and res) costs more than the
 * proxying itself. With inExpress it is mounted by app.use instead, for comparison.
 */
async function serveProxy(targetPort: number, inExpress: boolean, module?: string): Promise<{ port: number; proxy: EditorProxy }> {
  const Proxy: typeof EditorProxy = module ? (await import(path.resolve(module))).EditorProxy : EditorProxy;
  const proxy = new Proxy({ route: (port) => (port === targetPort ? { host: '127.0.0.1', port } : undefined) });
  const app = express();
  if (inExpress) app.use(proxy.middleware());
  app.use(express.json());
  const toProxy = proxy.middleware();
  const server = http.createServer(inExpress ? app : (req, res) => toProxy(req, res, () => app(req, res)));
  server.on('upgrade', (req, socket, head) => {
    if (!proxy.handleUpgrade(req, socket, head)) socket.destroy();
  });
  return { port: await listen(server), proxy };
}

/** The real code-server on a free port, with a fresh profile; resolves once /healthz answers. */
async function startCodeServer(bin: string): Promise<{ child: ChildProcess; port: number; page: string; root: string }> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'devbox-bench-editor-'));
  const port = await freePort();
  const workspace = path.join(root, 'workspace');
  fs.mkdirSync(workspace);
  const child = spawn(
    bin,
    ['--bind-addr', `127.0.0.1:${port}`, '--auth', 'none', '--user-data-dir', path.join(root, 'data'),
      '--extensions-dir', path.join(root, 'extensions'), '--disable-telemetry', '--disable-update-check', workspace],
    { stdio: 'ignore', detached: true },
  );
  for (let i = 0; ; i++) {
    const healthy = await fetch(`http://127.0.0.1:${port}/healthz`).then((res) => res.ok, () => false);
    if (healthy) break;
    if (i > 300) throw new Error('code-server did not answer /healthz within 30 s');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  // The workbench page: what a browser loads first, about 4 KB.
  return { child, port, page: `/?folder=${encodeURIComponent(workspace)}`, root };
}

/** Starts this file in a role in its own process and waits for the port it reports. */
async function startRole(role: string, ...args: string[]): Promise<{ child: ChildProcess; port: number }> {
  const extra = role === 'service' ? (process.env.BENCH_SERVICE_EXEC_ARGV ?? '').split(/\s+/).filter(Boolean) : [];
  const child = fork(fileURLToPath(import.meta.url), [role, ...args], { execArgv: ['--expose-gc', ...extra], stdio: 'inherit' });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (message) => resolve((message as { port: number }).port));
    child.once('exit', (code) => reject(new Error(`${role} exited with ${code}`)));
  });
  return { child, port };
}

function ask<T>(child: ChildProcess, question: string): Promise<T> {
  return new Promise((resolve) => {
    child.once('message', (answer) => resolve(answer as T));
    child.send(question);
  });
}

async function main(): Promise<void> {
  const [role, ...args] = process.argv.slice(2);
  if (role === 'target') return void process.send?.({ port: await serveTarget() });
  if (role === 'relay') return void process.send?.({ port: await serveRelay(Number(args[0])) });
  if (role === 'service') {
    const { port, proxy } = await serveProxy(Number(args[0]), args[1] === '--in-express', args[2] || undefined);
    // An orderly exit, so that a --cpu-prof given in BENCH_SERVICE_EXEC_ARGV is written.
    process.on('SIGTERM', () => process.exit(0));
    process.on('message', () => {
      globalThis.gc?.();
      process.send?.({ ...proxy.stats(), rssMb: round(process.memoryUsage().rss / 2 ** 20) });
    });
    return void process.send?.({ port });
  }

  const durationSec = Number(role) || 10;
  const inExpress = process.argv.includes('--in-express');
  const editorIndex = process.argv.indexOf('--editor');
  const editor = editorIndex > 0 ? await startCodeServer(process.argv[editorIndex + 1]) : undefined;
  const target = editor ?? (await startRole('target'));
  const floors = editor ? undefined : await startFloorRelays(target.port);
  const service = await startRole('service', String(target.port), inExpress ? '--in-express' : '');
  const compareIndex = process.argv.indexOf('--compare');
  const compareModule = compareIndex > 0 ? process.argv[compareIndex + 1] : undefined;
  const compare = compareModule ? await startRole('service', String(target.port), inExpress ? '--in-express' : '', compareModule) : undefined;
  try {
    const before = await ask<Record<string, number>>(service.child, 'stats');
    const figures = await benchProxy({
      proxyBase: `http://127.0.0.1:${service.port}/vscode/${target.port}`,
      directBase: `http://127.0.0.1:${target.port}`,
      relays: floors?.relays,
      servicePid: service.child.pid,
      compareBase: compare && `http://127.0.0.1:${compare.port}/vscode/${target.port}`,
      comparePid: compare?.child.pid,
      durationSec,
      path: editor?.page,
      echoes: editor ? 0 : 2000, // code-server has no echo endpoint
    });
    await new Promise((resolve) => setTimeout(resolve, 1000)); // let the last answers drain
    const after = await ask<Record<string, number>>(service.child, 'stats');
    const compareAfter = compare && (await ask<Record<string, number>>(compare.child, 'stats'));
    const setup = `${editor ? 'code-server workbench page' : '1 KB stand-in page'}, proxy ${inExpress ? 'inside' : 'in front of'} express` +
      (compareModule ? `; compare: ${compareModule}` : '');
    console.log(JSON.stringify({ setup, loadAverage: os.loadavg().map((n) => round(n)), ...figures,
      serviceRssBeforeMb: before.rssMb, serviceRssAfterMb: after.rssMb, pooledSocketsInUse: after.sockets, pooledSocketsIdle: after.freeSockets,
      ...(compareAfter && { comparePooledSocketsInUse: compareAfter.sockets, comparePooledSocketsIdle: compareAfter.freeSockets }) }, null, 2));
  } finally {
    floors?.stop();
    for (const child of [service.child, compare?.child]) child?.kill();
    // code-server starts helper processes: end its whole group (it was started detached, as its leader).
    if (editor?.child.pid) process.kill(-editor.child.pid);
    else target.child.kill();
    if (editor) fs.rmSync(editor.root, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}

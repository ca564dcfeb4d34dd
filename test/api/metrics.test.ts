// GET /metrics: the Prometheus text format, read with a strict parser, whose counters move with
// real traffic through the running service (the proxy to the stub editor, the API, the
// controller, the editor's log) and whose label values stay bounded.
import { randomBytes, randomUUID } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { loadSettings } from '../../src/config/settings.ts';
import { startService } from '../../src/service.ts';
import { opened } from '../helpers/net.ts';
import { parsePrometheusText, seriesOf, valueOf, type Family } from '../helpers/prometheus.ts';
import { eventually, makeSettings, startTestService, type TestService } from '../helpers/service.ts';

let service: TestService;
let id: string;
let port: number;
let server: { name: string; uid: string };

async function scrape(base = service.url, headers: Record<string, string> = {}): Promise<{ families: Map<string, Family>; text: string }> {
  const res = await fetch(`${base}/metrics`, { headers });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4; charset=utf-8$/);
  const text = await res.text();
  return { families: parsePrometheusText(text), text };
}

const metric = async (name: string, labels: Record<string, string> = {}) => valueOf((await scrape()).families, name, labels);

beforeAll(async () => {
  service = await startTestService();
  const created = await service.request('POST', '/servers', { name: 'Metered' });
  ({ id, port } = created.body);
  const started = await service.request('POST', `/servers/${id}/start`);
  expect(started.status).toBe(200);
  server = { name: (await service.request('GET', `/servers/${id}`)).body.manifest, uid: id };
});
afterAll(async () => {
  await service?.stop();
});

describe('GET /metrics', () => {
  it('answers the text format with each family of the fleet, the service and the process, typed', async () => {
    const { families } = await scrape();
    const expected: Record<string, string> = {
      devbox_server_phase: 'gauge',
      devbox_server_restarts_total: 'counter',
      devbox_server_cpu_seconds_total: 'counter',
      devbox_server_memory_bytes: 'gauge',
      devbox_server_last_activity_timestamp_seconds: 'gauge',
      devbox_server_proxy_requests_total: 'counter',
      devbox_server_proxy_received_bytes_total: 'counter',
      devbox_server_proxy_sent_bytes_total: 'counter',
      devbox_server_websockets_open: 'gauge',
      devbox_server_websockets_opened_total: 'counter',
      devbox_server_log_lines_total: 'counter',
      devbox_reconcile_duration_seconds: 'histogram',
      devbox_reconcile_errors_total: 'counter',
      devbox_workqueue_depth: 'gauge',
      devbox_api_request_duration_seconds: 'histogram',
      devbox_stream_clients: 'gauge',
      devbox_stream_clients_dropped_total: 'counter',
      process_resident_memory_bytes: 'gauge',
      process_cpu_seconds_total: 'counter',
      nodejs_eventloop_lag_seconds: 'gauge',
      nodejs_heap_size_used_bytes: 'gauge',
    };
    for (const [name, type] of Object.entries(expected)) {
      expect(families.get(name)?.type, name).toBe(type);
      expect(families.get(name)?.help, name).toBeTruthy();
    }
    expect(valueOf(families, 'process_resident_memory_bytes')).toBeGreaterThan(10 * 1024 * 1024);
    // The controller's own queue, read at the scrape: what the gauge says is what is waiting.
    await eventually(async () => valueOf((await scrape()).families, 'devbox_workqueue_depth') === service.controller.queue.length);
  });

  it('shows each server\'s phase (one of them 1), restarts, and the memory and CPU time of its editor', async () => {
    const { families } = await eventually(async () => {
      const read = await scrape();
      // The stats sampler runs every 0.5 s in tests: wait for a sample of the editor with its memory and its CPU time.
      const sampled = (valueOf(read.families, 'devbox_server_memory_bytes', server) ?? 0) > 0 && (valueOf(read.families, 'devbox_server_cpu_seconds_total', server) ?? 0) > 0;
      return sampled ? read : undefined;
    });
    const phases = families.get('devbox_server_phase')!.samples.filter((s) => s.labels.name === server.name);
    expect(phases.map((s) => s.labels.phase).sort()).toEqual(['Failed', 'Pending', 'Provisioning', 'Running', 'Starting', 'Stopped', 'Stopping', 'Terminating']);
    expect(phases.filter((s) => s.value === 1).map((s) => s.labels)).toEqual([{ ...server, phase: 'Running' }]);
    expect(valueOf(families, 'devbox_server_restarts_total', server)).toBe(0);
    // The stub is a node process: tens of MB resident, and some CPU time to start.
    expect(valueOf(families, 'devbox_server_memory_bytes', server)).toBeGreaterThan(5 * 1024 * 1024);
    expect(valueOf(families, 'devbox_server_cpu_seconds_total', server)).toBeGreaterThan(0);
  });

  it('counts requests proxied to the editor by status class, their bytes, and the server\'s last activity', async () => {
    const before = (await scrape()).families;
    const count = (families: Map<string, Family>, code: string) => valueOf(families, 'devbox_server_proxy_requests_total', { ...server, code }) ?? 0;
    const since = Date.now();
    let pageBytes = 0;
    for (let i = 0; i < 5; i++) {
      const res = await fetch(`${service.url}/vscode/${port}/`);
      expect(res.status).toBe(200);
      pageBytes += (await res.text()).length;
    }
    for (let i = 0; i < 3; i++) expect((await fetch(`${service.url}/vscode/${port}/missing`)).status).toBe(404);
    const upload = await fetch(`${service.url}/vscode/${port}/upload`, { method: 'POST', body: 'x'.repeat(10_000) });
    expect(upload.status).toBe(404);
    await upload.text();

    const after = await eventually(async () => {
      const { families } = await scrape();
      return count(families, '4xx') - count(before, '4xx') === 4 ? families : undefined;
    });
    expect(count(after, '2xx') - count(before, '2xx')).toBe(5);
    expect(count(after, '5xx') - count(before, '5xx')).toBe(0);
    const grew = (name: string) => valueOf(after, name, server)! - (valueOf(before, name, server) ?? 0);
    expect(grew('devbox_server_proxy_received_bytes_total')).toBeGreaterThanOrEqual(10_000);
    expect(grew('devbox_server_proxy_sent_bytes_total')).toBeGreaterThan(pageBytes);
    const last = valueOf(after, 'devbox_server_last_activity_timestamp_seconds', server)!;
    expect(last).toBeGreaterThanOrEqual(since / 1000 - 1);
    expect(last).toBeLessThanOrEqual(Date.now() / 1000 + 1);
  });

  it('counts WebSockets to the editor, open and opened, and the bytes they carry', async () => {
    const before = (await scrape()).families;
    const opens = (families: Map<string, Family>) => valueOf(families, 'devbox_server_websockets_opened_total', server) ?? 0;
    const received = (families: Map<string, Family>) => valueOf(families, 'devbox_server_proxy_received_bytes_total', server) ?? 0;
    const ws = await opened(new WebSocket(`${service.url.replace('http', 'ws')}/vscode/${port}/socket`));
    const echoed = new Promise((resolve) => ws.once('message', resolve));
    ws.send('y'.repeat(4096));
    expect(String(await echoed)).toHaveLength(4096);

    const during = await eventually(async () => {
      const { families } = await scrape();
      return valueOf(families, 'devbox_server_websockets_open', server) === 1 ? families : undefined;
    });
    expect(opens(during) - opens(before)).toBe(1);
    expect(received(during) - received(before)).toBeGreaterThanOrEqual(4096);

    ws.close();
    await eventually(async () => (await metric('devbox_server_websockets_open', server)) === 0);
    expect(opens((await scrape()).families) - opens(before)).toBe(1);
  });

  it('times API requests by route pattern and status, never by the raw path', async () => {
    const unknown = randomUUID();
    for (let i = 0; i < 3; i++) expect((await service.request('GET', `/servers/${id}`)).status).toBe(200);
    expect((await service.request('GET', `/servers/${unknown}`)).status).toBe(404);
    expect((await service.request('GET', `/no-such-route-${unknown}`)).status).toBe(404);

    const { families, text } = await scrape();
    const count = (labels: Record<string, string>) => valueOf(families, 'devbox_api_request_duration_seconds_count', labels) ?? 0;
    expect(count({ method: 'GET', route: '/servers/:id', status: '200' })).toBeGreaterThanOrEqual(3);
    expect(count({ method: 'GET', route: '/servers/:id', status: '404' })).toBeGreaterThanOrEqual(1);
    expect(count({ method: 'GET', route: 'unmatched', status: '404' })).toBeGreaterThanOrEqual(1);
    expect(count({ method: 'POST', route: '/servers/:id/start', status: '200' })).toBeGreaterThanOrEqual(1);
    expect(text).not.toContain(unknown);
    const routes = new Set(families.get('devbox_api_request_duration_seconds')!.samples.map((s) => s.labels.route));
    for (const route of routes) expect(route, route).not.toContain(id);
  });

  it('times each reconcile, and counts the restart: a restart adds reconciles and one restart', async () => {
    const reconciles = async () => (await metric('devbox_reconcile_duration_seconds_count'))!;
    const before = await reconciles();
    const errorsBefore = (await metric('devbox_reconcile_errors_total'))!;
    // Every reconcile that ends in an error is counted: as many as the controller reports.
    let failures = 0;
    const offDone = service.index.on('reconciled', ({ error }) => void (error !== undefined && failures++));
    expect(before).toBeGreaterThan(0);
    expect(await metric('devbox_server_restarts_total', server)).toBe(0);
    expect((await service.request('POST', `/servers/${id}/restart`)).status).toBe(200);
    expect(await reconciles()).toBeGreaterThan(before);
    offDone();
    expect(await metric('devbox_reconcile_errors_total')).toBe(errorsBefore + failures);
    expect(await metric('devbox_server_restarts_total', server)).toBe(1);
    expect(await metric('devbox_server_phase', { ...server, phase: 'Running' })).toBe(1);
  });

  it('counts the log lines of each server: what its editor printed and the controller\'s events', async () => {
    // The stub prints a line on stdout and one on stderr at each start.
    await eventually(async () => ((await metric('devbox_server_log_lines_total', { ...server, source: 'server' })) ?? 0) >= 2);
    expect(await metric('devbox_server_log_lines_total', { ...server, source: 'controller' })).toBeGreaterThanOrEqual(2);
  });

  it('counts log stream clients', async () => {
    const ws = await opened(new WebSocket(`${service.url.replace('http', 'ws')}/ws/logs/${id}?tail=1`));
    await eventually(async () => (await metric('devbox_stream_clients', { stream: 'logs' })) === 1);
    ws.close();
    await eventually(async () => (await metric('devbox_stream_clients', { stream: 'logs' })) === 0);
    expect(await metric('devbox_stream_clients_dropped_total', { stream: 'logs' })).toBe(0);
  });

  it('keeps label values bounded: 200 random URLs through the API and the proxy add no series', async () => {
    const random = () => randomBytes(6).toString('hex');
    const hit = async (i: number, word: string) => {
      const path = [`/servers/${randomUUID()}`, `/${word}`, `/vscode/${port}/${word}`, `/servers/${word}/logs`][i % 4];
      const res = await fetch(service.url + path);
      await res.arrayBuffer();
      expect(res.status, path).toBe(404);
    };
    // One of each kind first: the series they belong to exist from then on.
    for (let i = 0; i < 4; i++) await hit(i, random());
    // The editor restarted by an earlier test has its memory sampled again before the first count.
    await eventually(async () => (await metric('devbox_server_memory_bytes', server)) !== undefined);
    const devboxSeries = (families: Map<string, Family>) => new Set([...seriesOf(families)].filter((s) => s.startsWith('devbox_')));
    const before = devboxSeries((await scrape()).families);
    const words = Array.from({ length: 200 }, random);
    for (let i = 0; i < words.length; i++) await hit(i, words[i]);
    const { families, text } = await scrape();
    expect([...devboxSeries(families)].filter((s) => !before.has(s))).toEqual([]);
    for (const word of words) expect(text).not.toContain(word);
  });

  it('removes the series of a deleted server', async () => {
    const created = await service.request('POST', '/servers', { name: 'Doomed' });
    expect(created.status).toBe(201);
    const doomed = created.body;
    expect((await service.request('POST', `/servers/${doomed.id}/start`)).status).toBe(200);
    expect((await fetch(`${service.url}/vscode/${doomed.port}/`)).status).toBe(200);
    const withIt = await eventually(async () => {
      const { text } = await scrape();
      return text.includes(`uid="${doomed.id}"`) && text.includes('devbox_server_proxy_requests_total{name="doomed"') ? text : undefined;
    });
    expect(withIt).toContain(`devbox_server_phase{name="doomed",uid="${doomed.id}",phase="Running"} 1`);

    expect((await service.request('DELETE', `/servers/${doomed.id}`)).status).toBe(200);
    const { families, text } = await scrape();
    expect(text).not.toContain(doomed.id);
    const left = [...families.values()].flatMap((f) => f.samples).filter((s) => s.labels.name === 'doomed');
    expect(left).toEqual([]);
    // The other server's series are still there.
    expect(valueOf(families, 'devbox_server_phase', { ...server, phase: 'Running' })).toBe(1);
  });
});

describe('GET /metrics in deployed mode', () => {
  it('follows the identity rule of every route: 401 without the forwarded identity, the metrics with it', async () => {
    const deployed = await startTestService({ requireIdentity: true });
    try {
      const refused = await deployed.request('GET', '/metrics');
      expect(refused.status).toBe(401);
      expect(refused.body.error.code).toBe('UNAUTHENTICATED');
      const { families } = await scrape(deployed.url, { 'X-Forwarded-Email': 'ada@example.com' });
      expect(families.get('devbox_server_phase')?.type).toBe('gauge');
    } finally {
      await deployed.stop();
    }
  });
});

describe('DEVBOX_METRICS', () => {
  it('is on by default; 0 takes GET /metrics away; anything else is refused with what to write', () => {
    expect(loadSettings({}, { readConfig: false }).metrics).toBe(true);
    expect(loadSettings({ DEVBOX_METRICS: '0' }, { readConfig: false }).metrics).toBe(false);
    expect(loadSettings({ DEVBOX_ACTIVITY_TRACKING: '0' }, { readConfig: false }).activityTracking).toBe(false);
    expect(() => loadSettings({ DEVBOX_METRICS: 'yes' }, { readConfig: false })).toThrow(/DEVBOX_METRICS="yes" must be 1 \(on\) or 0 \(off\)/);
  });

  it('set to 0, the service has no /metrics and serves as before', async () => {
    const settings = { ...await makeSettings(), metrics: false, activityTracking: false };
    const root = join(settings.manifestsDir, '..');
    const bare = await startService(settings, () => undefined);
    try {
      const res = await fetch(`${bare.url}/metrics`);
      expect(res.status).toBe(404);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('NOT_FOUND');
      expect((await fetch(`${bare.url}/servers`)).status).toBe(200);
    } finally {
      await bare.close();
      await fs.rm(root, { recursive: true, force: true });
    }
  });
});

describe('the strict exposition parser of these tests', () => {
  const valid = [
    '# HELP a_total Things, with a \\\\ and a \\n.',
    '# TYPE a_total counter',
    'a_total{name="x\\"y\\\\z\\n",uid="1"} 3',
    'a_total{name="w",uid="2",} 0 1700000000000',
    '# TYPE h histogram',
    'h_bucket{le="0.1"} 1',
    'h_bucket{le="+Inf"} 2',
    'h_sum 0.3',
    'h_count 2',
    'g NaN',
    '',
  ].join('\n');

  it('reads a valid exposition: escapes, trailing commas, timestamps, histograms', () => {
    const families = parsePrometheusText(valid);
    expect(families.get('a_total')?.help).toBe('Things, with a \\ and a \n.');
    expect(valueOf(families, 'a_total', { name: 'x"y\\z\n' })).toBe(3);
    expect(families.get('h')?.samples).toHaveLength(4);
    expect(valueOf(families, 'g')).toBeNaN();
  });

  it.each([
    ['a sample with a bad name', '1abc 1\n'],
    ['a bad value', 'a 1x\n'],
    ['a label without quotes', 'a{b=c} 1\n'],
    ['an unclosed label value', 'a{b="c} 1\n'],
    ['an unknown escape', 'a{b="\\t"} 1\n'],
    ['a label twice', 'a{b="1",b="2"} 1\n'],
    ['a duplicate series', 'a{b="1"} 1\na{b="1"} 2\n'],
    ['a family split in two', 'a 1\nb 1\na{c="1"} 1\n'],
    ['TYPE after samples', 'a 1\n# TYPE a gauge\n'],
    ['an unknown type', '# TYPE a meter\n'],
    ['a counter below zero', '# TYPE a counter\na -1\n'],
    ['buckets that are not cumulative', '# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n'],
    ['a histogram without +Inf', '# TYPE h histogram\nh_bucket{le="1"} 1\nh_sum 1\nh_count 1\n'],
    ['no final line feed', 'a 1'],
  ])('refuses %s', (_what, text) => {
    expect(() => parsePrometheusText(text)).toThrow();
  });
});

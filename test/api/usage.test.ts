// GET /servers/{id}/usage and GET /usage against the running service and real editor processes
// (the stub editor, made to spin a share of a core and hold memory: test/fixtures/busy-editor.mjs),
// sampled every 0.25 s into one-second buckets: the figures are those of the processes, a window
// reads only its last seconds, a stopped server keeps its history and a deleted one loses it, idle
// stops are counted, and a server the requester may not see answers 404 as its other reads do.
import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { documentSchemas, pointer } from '../helpers/openapi.ts';
import { eventually, startTestService, type TestService } from '../helpers/service.ts';

const BUSY_EDITOR = new URL('../fixtures/busy-editor.mjs', import.meta.url).pathname;
const ALICE = { 'X-Forwarded-Email': 'alice@example.com' };
const BOB = { 'X-Forwarded-Email': 'bob@example.com' };

let service: TestService;

beforeAll(async () => {
  service = await startTestService({
    editorBin: BUSY_EDITOR,
    // `owner` access: the identity headers decide who sees which server (no sign-in is required locally).
    config: { access: 'owner', controller: { statsIntervalSeconds: 0.25, usageBucketSeconds: 1, usageHistoryMinutes: 2 } },
  });
});
afterAll(async () => {
  await service?.stop();
});

/** Creates a server as `who` and starts it with its editor told to use `duty` of a core and `mb` of memory. */
async function startBusy(name: string, duty: number, mb: number, who = ALICE): Promise<{ id: string; pid: number }> {
  const created = await service.request('POST', '/servers', { name }, who);
  expect(created.status).toBe(201);
  process.env.BUSY_EDITOR_DUTY = String(duty);
  process.env.BUSY_EDITOR_MB = String(mb);
  try {
    const started = await service.request('POST', `/servers/${created.body.id}/start`, undefined, who);
    expect(started.status).toBe(200);
    return { id: created.body.id, pid: started.body.data.pid };
  } finally {
    delete process.env.BUSY_EDITOR_DUTY;
    delete process.env.BUSY_EDITOR_MB;
  }
}

const usageOf = async (id: string, query = '', who = ALICE) => service.request('GET', `/servers/${id}/usage${query}`, undefined, who);

/** Resident memory of a process now, MB, as /proc says. */
function rssMb(pid: number): number {
  const pages = Number(readFileSync(`/proc/${pid}/stat`, 'latin1').split(') ')[1].split(' ')[21]);
  return (pages * 4096) / (1024 * 1024);
}

/** Checks an answer against the response GET /openapi.json documents for the route and status. */
async function expectDocumented(path: string, answer: { status: number; body: unknown }): Promise<void> {
  const doc = (await service.request('GET', '/openapi.json')).body;
  const validate = documentSchemas(doc).at(pointer('paths', path, 'get', 'responses', String(answer.status), 'content', 'application/json', 'schema'));
  expect(validate(answer.body) ? [] : validate.errors, `${path} ${answer.status}`).toEqual([]);
}

const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;

describe('the usage history over the API', () => {
  let busy: { id: string; pid: number };
  let quiet: { id: string; pid: number };

  beforeAll(async () => {
    busy = await startBusy('Busy', 0.6, 96);
    quiet = await startBusy('Quiet', 0, 0);
    // Five seconds of samples of both.
    await eventually(async () => (await usageOf(busy.id)).body.data.points.length >= 5 && (await usageOf(quiet.id)).body.data.points.length >= 5, 30_000);
  }, 60_000);

  it('gives a running server\'s CPU and memory per second, as its processes use them', async () => {
    const answer = await usageOf(busy.id);
    expect(answer.status).toBe(200);
    await expectDocumented('/servers/{id}/usage', answer);
    const data = answer.body.data;
    expect(data.bucket_seconds).toBe(1);
    expect(data.window_seconds).toBe(120);
    for (const point of data.points) {
      expect(point.samples).toBeGreaterThan(0);
      expect(point.cpu_percent.min).toBeLessThanOrEqual(point.cpu_percent.avg);
      expect(point.cpu_percent.avg).toBeLessThanOrEqual(point.cpu_percent.max);
      expect(point.memory_mb.min).toBeLessThanOrEqual(point.memory_mb.max);
      // Oldest first, one a second.
      expect(Date.parse(point.time) % 1000).toBe(0);
    }
    const times = data.points.map((p: { time: string }) => Date.parse(p.time));
    expect(times).toEqual([...times].sort((a, b) => a - b));
    // Memory: what /proc says the editor holds now, within the spread of its last point.
    const last = data.points.at(-1);
    const rss = rssMb(busy.pid);
    expect(rss).toBeGreaterThan(96);
    expect(last.memory_mb.max).toBeGreaterThan(rss * 0.8);
    expect(last.memory_mb.min).toBeLessThan(rss * 1.2);
    // The busy editor holds 96 MB more than the quiet one, and spins where the quiet one idles.
    const quietPoints = (await usageOf(quiet.id)).body.data.points;
    expect(mean(data.points.map((p: any) => p.memory_mb.avg)) - mean(quietPoints.map((p: any) => p.memory_mb.avg))).toBeGreaterThan(80);
    const busyCpu = mean(data.points.slice(1).map((p: any) => p.cpu_percent.avg));
    const quietCpu = mean(quietPoints.slice(1).map((p: any) => p.cpu_percent.avg));
    // (How much of its 60 % the spinner gets depends on what else the machine runs: only the difference is certain.)
    expect(busyCpu).toBeGreaterThan(5);
    expect(quietCpu).toBeLessThan(busyCpu / 3);
  });

  it('reads a window of the last seconds, and refuses one it does not keep, saying which it keeps', async () => {
    const answer = await usageOf(busy.id, '?window=3s');
    expect(answer.status).toBe(200);
    expect(answer.body.data.window_seconds).toBe(3);
    const from = Date.parse(answer.body.data.from);
    expect(Date.parse(answer.body.data.to) - from).toBe(3000);
    expect(answer.body.data.points.length).toBeGreaterThan(0);
    expect(answer.body.data.points.length).toBeLessThanOrEqual(4);
    for (const point of answer.body.data.points) expect(Date.parse(point.time)).toBeGreaterThan(from - 1000);

    for (const window of ['3h', 'abc', '0', '-5m', '2m30']) {
      const refused = await usageOf(busy.id, `?window=${encodeURIComponent(window)}`);
      expect(refused.status, window).toBe(400);
      expect(refused.body.error.code).toBe('INVALID_WINDOW');
      await expectDocumented('/servers/{id}/usage', refused);
      expect(refused.body.error.message).toContain('from 1 s to 2 min');
      expect(refused.body.error.message).toContain('controller.usageHistoryMinutes');
    }
    expect((await service.request('GET', '/usage?window=2m')).status).toBe(200);
    expect((await service.request('GET', '/usage?window=121')).status).toBe(400);
  });

  it('answers 404 to someone who may not see the server, as its other reads do', async () => {
    const other = await usageOf(busy.id, '', BOB);
    expect(other.status).toBe(404);
    expect(other.body.error.code).toBe('SERVER_NOT_FOUND');
    expect(JSON.stringify(other.body)).not.toContain('cpu_percent');
    // The same refusal as for an id no server has.
    const unknown = await usageOf('00000000-0000-4000-8000-00000000dead', '', BOB);
    expect(unknown.status).toBe(404);
    expect(other.body.error.message.replace(busy.id, '')).toBe(unknown.body.error.message.replace('00000000-0000-4000-8000-00000000dead', ''));
  });

  it('gives the fleet\'s running editors and their memory together', async () => {
    const fleet = await service.request('GET', '/usage');
    expect(fleet.status).toBe(200);
    await expectDocumented('/usage', fleet);
    const points = fleet.body.data.points;
    // The last full second: both editors ran through it.
    const settled = points.at(-2);
    expect(settled.running).toEqual({ min: 2, avg: 2, max: 2 });
    const both = rssMb(busy.pid) + rssMb(quiet.pid);
    expect(settled.memory_mb.avg).toBeGreaterThan(both * 0.8);
    expect(settled.memory_mb.avg).toBeLessThan(both * 1.2);
    expect(JSON.stringify(fleet.body)).not.toMatch(/Busy|Quiet|busy|quiet/);
  });

  it('keeps a stopped server\'s history, with no point after it stopped; a deleted server\'s goes', async () => {
    const stopped = await service.request('POST', `/servers/${quiet.id}/stop`, undefined, ALICE);
    expect(stopped.status).toBe(200);
    const stoppedAt = Date.now();
    // The fleet sees one editor from the next full second on.
    await eventually(async () => {
      const points = (await service.request('GET', '/usage')).body.data.points;
      return points.some((p: any) => Date.parse(p.time) > stoppedAt + 1000 && p.running?.max === 1);
    }, 15_000);
    const kept = (await usageOf(quiet.id)).body.data.points;
    expect(kept.length).toBeGreaterThanOrEqual(5);
    expect(Date.parse(kept.at(-1).time)).toBeLessThanOrEqual(stoppedAt);

    const deleted = await service.request('DELETE', `/servers/${quiet.id}`, undefined, ALICE);
    expect(deleted.status).toBe(200);
    await eventually(async () => (await usageOf(quiet.id)).status === 404, 15_000);
    // A server made again under the same name starts with no history.
    const again = await service.request('POST', '/servers', { name: 'Quiet' }, ALICE);
    expect(again.status).toBe(201);
    expect((await usageOf(again.body.id)).body.data.points).toEqual([]);
  });
});

describe('idle stops in the fleet\'s usage', () => {
  it('counts a server stopped for idleness, once, in the second it stopped', async () => {
    const before = (await service.request('GET', '/usage')).body.data.idle_stops;
    const { id } = await startBusy('Sleepy', 0, 0);
    // An idle timeout of 2 s, written into its manifest by hand (the API has no field for it).
    const manifest = (await service.request('GET', `/servers/${id}/manifest`, undefined, ALICE)).body.data;
    expect(manifest.yaml).toMatch(/^spec:$/m);
    writeFileSync(manifest.file, manifest.yaml.replace(/^spec:\n/m, 'spec:\n  idleTimeoutSeconds: 2\n'));
    const record = await eventually(async () => {
      const answer = (await service.request('GET', `/servers/${id}`, undefined, ALICE)).body;
      return answer.reason === 'IdleTimeout' && answer.status === 'stopped' ? answer : undefined;
    }, 30_000);
    const answer = await service.request('GET', '/usage');
    await expectDocumented('/usage', answer);
    const usage = answer.body.data;
    expect(usage.idle_stops).toBe(before + 1);
    const point = usage.points.find((p: any) => p.idle_stops > 0);
    expect(point.time).toBe(new Date(Math.floor(Date.parse(record.idle_stopped_at) / 1000) * 1000).toISOString());
    // A later look at the server (a refresh writes its status again) is not a second stop.
    await service.request('POST', `/servers/${id}/refresh-status`, undefined, ALICE);
    expect((await service.request('GET', '/usage')).body.data.idle_stops).toBe(before + 1);
  }, 60_000);
});

// A noisy editor through the running service: the lines over the log rate limit are left out of
// the entries, said by a marker entry, and counted in the server's health, GET /health and the metrics.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { opened } from '../helpers/net.ts';
import { eventually, startTestService, type TestService } from '../helpers/service.ts';

let service: TestService;
let id: string;
let manifest: string;

beforeAll(async () => {
  service = await startTestService();
  ({ id } = (await service.request('POST', '/servers', { name: 'Noisy' })).body);
  await service.request('POST', `/servers/${id}/start`);
  ({ manifest } = (await service.request('GET', `/servers/${id}`)).body);
});
afterAll(async () => {
  await service?.stop();
});

const BLOCK = 20_000;
const MARKER = /^… ([\d,]+) lines dropped \(rate limit 5,000 lines\/s\)$/;

describe('an editor printing faster than the log rate limit', () => {
  it('has the lines over it counted, reported by marker entries on the stream, and still written to server.log', async () => {
    const { stdout, dir } = service.logs.rawPaths(manifest);
    const before = (await service.request('GET', `/servers/${id}/health`)).body.data;
    expect(before.log_lines_dropped).toBe(0);

    // The server's live stream, from now on.
    const frames: { level: string; source: string; message: string }[] = [];
    const ws = new WebSocket(`${service.url.replace('http', 'ws')}/ws/logs/${id}?tail=0`);
    ws.on('message', (data) => frames.push(JSON.parse(String(data))));
    await opened(ws);

    // Blocks of 20,000 lines at once, through the file the editor writes its stdout to: twice the
    // default burst of 10,000, far faster than 5,000 a second. A machine so busy that the service
    // reads one block more slowly than the limit lets through drops nothing: another block then.
    const seqs = () => frames.flatMap((frame) => (frame.source === 'server' && / seq=\d+$/.test(frame.message) ? [Number(frame.message.split('seq=')[1])] : []));
    const reported = () => frames.reduce((sum, frame) => sum + Number(MARKER.exec(frame.message)?.[1].replaceAll(',', '') ?? 0), 0);
    let written = 0;
    while (reported() === 0 && written < 10 * BLOCK) {
      const fd = fs.openSync(stdout, 'a');
      try {
        fs.writeSync(fd, Array.from({ length: BLOCK }, (_, i) => `GET /static/${written + i}.js 200 seq=${written + i}\n`).join(''));
      } finally {
        fs.closeSync(fd);
      }
      written += BLOCK;
      // Every line is either sent or counted by a marker.
      await eventually(() => seqs().length + reported() === written, 30_000);
    }
    ws.close();
    const dropped = reported();
    // Every line over what the bucket held was dropped; the refill while reading lets a few more through.
    expect(dropped).toBeGreaterThan(0);
    expect(dropped).toBeLessThanOrEqual(written - 10_000);
    // The lines sent are the first ones of each read, in order.
    expect(seqs()).toEqual([...seqs()].sort((a, b) => a - b));
    const marker = frames.find((frame) => MARKER.test(frame.message))!;
    expect(marker).toMatchObject({ level: 'WARN', source: 'controller' });

    // The REST route's newest entries have the marker too (the last one, once the output paused).
    const logs: string[] = (await service.request('GET', `/servers/${id}/logs?lines=5`)).body.data.logs;
    expect(logs.filter((line) => !line.includes(' seq=')).at(-1)).toMatch(/ \[WARN\] \[controller\] … [\d,]+ lines dropped \(rate limit 5,000 lines\/s\)$/);

    const health = (await service.request('GET', `/servers/${id}/health`)).body.data;
    expect(health.log_lines_dropped).toBe(dropped);
    const serviceHealth = (await service.request('GET', '/health')).body;
    expect(serviceHealth.logs).toEqual({ rate_limit: { lines_per_sec: 5000, burst: 10_000 }, lines_dropped: dropped });
    const metrics = await (await fetch(`${service.url}/metrics`)).text();
    expect(metrics).toContain(`devbox_server_log_lines_dropped_total{name="${manifest}",uid="${id}"} ${dropped}`);

    // server.log has every line written, the dropped ones included, in order.
    const logged = fs.readFileSync(path.join(dir, 'server.log'), 'utf8').split('\n').flatMap((line) => {
      const seq = / seq=(\d+)$/.exec(line);
      return seq ? [Number(seq[1])] : [];
    });
    expect(logged).toEqual(Array.from({ length: written }, (_, i) => i));
  });
});

// Waiting for an editor's /healthz backs off instead of asking every 10 ms for minutes, and still
// notices an editor that comes up within its first second at once.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { waitHealthy } from '../../src/runtime/health.ts';

let server: Server | undefined;
afterEach(async () => {
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
});

/** An editor that answers 503 until `upAfterMs`, then 200; records when each question came. */
async function editor(upAfterMs: number): Promise<{ port: number; asked: number[]; startedAt: number }> {
  const asked: number[] = [];
  const startedAt = performance.now();
  server = createServer((_req, res) => {
    asked.push(performance.now() - startedAt);
    res.writeHead(performance.now() - startedAt >= upAfterMs ? 200 : 503, { Connection: 'close' }).end('{"status":"alive"}');
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return { port: (server!.address() as AddressInfo).port, asked, startedAt };
}

describe('waitHealthy', () => {
  it('asks less and less often after the first second: its waits grow toward a second', async () => {
    const { port, asked } = await editor(Infinity);
    expect(await waitHealthy(port, Date.now() + 3000, () => false)).toBe(false);
    // Every 10 ms throughout would be about 250 questions.
    expect(asked.length).toBeLessThan(160);
    const gaps = asked.slice(1).map((t, i) => t - asked[i]);
    expect(gaps.at(-2)!).toBeGreaterThan(200);
  });

  it('notices an editor that comes up within its first second at once', async () => {
    const { port, startedAt } = await editor(400);
    expect(await waitHealthy(port, Date.now() + 5000, () => false)).toBe(true);
    const took = performance.now() - startedAt;
    expect(took).toBeGreaterThanOrEqual(400);
    expect(took).toBeLessThan(400 + 60); // one 10 ms wait, and room for a busy machine
  });
});

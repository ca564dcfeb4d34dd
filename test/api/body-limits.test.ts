// Bodies are bounded in cost, not only in bytes: 0.8 MB of settings once took 35 s to create, as
// every read of the manifest compared each settings key with all before it. Settings have the same
// limits in a hand-written manifest, so no file carries what the API refuses.
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { eventually, startTestService, type TestService } from '../helpers/service.ts';

let service: TestService;

beforeAll(async () => {
  service = await startTestService();
});
afterAll(async () => {
  await service?.stop();
});

const manyKeys = (count: number): Record<string, unknown> =>
  Object.fromEntries(Array.from({ length: count }, (_, i) => [`editor.setting${i}`, `value ${i} `.padEnd(40, 'x')]));
const nested = (depth: number): Record<string, unknown> => (depth === 1 ? { leaf: true } : { level: nested(depth - 1) });
const manifests = async () => (await fs.readdir(service.settings.manifestsDir)).filter((f) => f.endsWith('.yaml'));

/** Runs `work` while measuring how long the service's event loop (this process's) was blocked at most. */
async function timed<T>(work: () => Promise<T>): Promise<{ result: T; ms: number; maxStallMs: number }> {
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  const start = performance.now();
  const result = await work();
  const ms = performance.now() - start;
  delay.disable();
  return { result, ms, maxStallMs: delay.max / 1e6 };
}

describe('request bodies', () => {
  it('refuses 0.8 MB of settings at once, and writes no manifest', async () => {
    const before = await manifests();
    const body = JSON.stringify({ name: 'Huge', settings: manyKeys(12_000) });
    expect(body.length / 1e6).toBeCloseTo(0.8, 1);
    const { result, ms } = await timed(() => service.request('POST', '/servers', body));
    expect(result.status).toBe(400);
    expect(result.body.error.code).toBe('BODY_TOO_COMPLEX');
    expect(result.body.error.message).toMatch(/more than 2000 keys and array items/);
    expect(ms).toBeLessThan(2000);
    expect(await manifests()).toEqual(before);
  });

  it.each([
    ['more than 1000 keys', () => manyKeys(1001), /holds more than 1000 keys and array items/],
    ['nested deeper than 16 levels', () => nested(17), /is nested deeper than 16 levels/],
    ['over 64 KiB as JSON', () => ({ 'editor.big': 'x'.repeat(70 * 1024) }), /is 71 KiB as JSON, more than 64 KiB/],
  ])('refuses settings with %s: 413 SETTINGS_TOO_LARGE, saying which limit', async (_what, settings, message) => {
    const before = await manifests();
    const res = await service.request('POST', '/servers', { name: 'Too much', settings: settings() });
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({ status: 'error', error: { code: 'SETTINGS_TOO_LARGE' } });
    expect(res.body.error.message).toMatch(message);
    expect(await manifests()).toEqual(before);
  });

  it('refuses a body nested deeper than 20 levels, however deep, with 400', async () => {
    const deep = await service.request('POST', '/servers', { name: 'Deep', extensions: nested(21) });
    expect(deep.status).toBe(400);
    expect(deep.body.error).toMatchObject({ code: 'BODY_TOO_COMPLEX', message: expect.stringMatching(/deeper than 20 levels/) });
    const abyss = await service.request('POST', '/servers', '['.repeat(500_000) + ']'.repeat(500_000));
    expect(abyss.status).toBe(400);
    expect((await service.request('GET', '/health')).status).toBe(200);
  });

  it('creates a server with settings at every limit in milliseconds, without stalling the service', async () => {
    const settings = manyKeys(984);
    settings['editor.tree'] = nested(15); // 16 levels with the settings object, 1000 keys in all
    expect(Buffer.byteLength(JSON.stringify(settings))).toBeGreaterThan(55 * 1024);
    const { result, ms, maxStallMs } = await timed(() => service.request('POST', '/servers', { name: 'Full', settings }));
    expect(result.status).toBe(201);
    const text = await fs.readFile(join(service.settings.manifestsDir, 'full.yaml'), 'utf8');
    expect(text).toContain('editor.setting983');
    console.log(`POST /servers with ${Math.round(Buffer.byteLength(JSON.stringify(settings)) / 1024)} KiB of settings: ${Math.round(ms)} ms, event loop blocked at most ${Math.round(maxStallMs)} ms`);
    expect(ms).toBeLessThan(3000);
    expect(maxStallMs).toBeLessThan(500);
  });
});

describe('a hand-written manifest', () => {
  it('may not carry settings the API refuses: it is invalid, with the same words', async () => {
    const manifest = { apiVersion: 'devbox.dev/v1alpha1', kind: 'EditorServer', metadata: { name: 'by-hand' }, spec: { running: false, settings: manyKeys(1001) } };
    await fs.writeFile(join(service.settings.manifestsDir, 'by-hand.yaml'), stringify(manifest));
    const entry = await eventually(async () => (await service.request('GET', '/manifests')).body.find((m: { name: string }) => m.name === 'by-hand'));
    expect(entry.valid).toBe(false);
    expect(entry.errors).toEqual([`${join(service.settings.manifestsDir, 'by-hand.yaml')}:8:5: spec.settings: holds more than 1000 keys and array items: keep only the settings that differ from the defaults`]);
  });
});

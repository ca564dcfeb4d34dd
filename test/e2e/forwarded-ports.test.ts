// Forwarded ports with the real code-server: its own port proxy, which would reach any port of
// the machine (another server's program, another editor, the service), is off, so the service's
// proxy is the only way to a port, and it forwards only the server's own.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveEditorBinary } from '../../src/runtime/editor-binary.ts';
import { startPortProgram, type PortProgram } from '../helpers/port-program.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

let service: TestService;
let editor: { id: string; port: number; manifest: string };
let mine: PortProgram;
let foreign: PortProgram;

beforeAll(async () => {
  service = await startTestService({
    editorBin: resolveEditorBinary().path,
    config: { editor: { startTimeoutSeconds: 60, readyTimeoutSeconds: 60, stopGraceSeconds: 5 } },
  });
  const created = await service.request('POST', '/servers', { name: `Ports ${randomUUID().slice(0, 8)}` });
  const started = await service.request('POST', `/servers/${created.body.id}/start`);
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  const record = await service.request('GET', `/servers/${created.body.id}`);
  editor = { id: created.body.id, port: created.body.port, manifest: record.body.manifest };
  mine = await startPortProgram({ server: editor.manifest });
  foreign = await startPortProgram({});
}, 120_000);

afterAll(async () => {
  await Promise.all([mine, foreign].map((p) => p?.stop()));
  await service?.stop();
});

describe('the real code-server\'s port proxy', () => {
  it('is off: asked directly, it forwards to no port', async () => {
    for (const path of [`/proxy/${foreign.port}/`, `/absproxy/${foreign.port}/`, `/PROXY/${foreign.port}x/`]) {
      const direct = await fetch(`http://127.0.0.1:${editor.port}${path}`);
      expect(direct.status, path).toBe(403);
      expect(await direct.text()).not.toContain(String(foreign.pid));
    }
  });

  it('is replaced by the service\'s, which forwards the server\'s own port and refuses another program\'s in any spelling', async () => {
    const through = await fetch(`${service.url}/vscode/${editor.port}/proxy/${mine.port}/hello`);
    expect(await through.json()).toMatchObject({ pid: mine.pid, url: '/hello' });
    // The listing has the program's port, and none of code-server's own.
    const listed = await service.request('GET', `/servers/${editor.id}/ports`);
    expect(listed.body.map((p: { port: number }) => p.port)).toEqual([mine.port]);
    for (const path of [`/proxy/${foreign.port}/`, `/PROXY/${foreign.port}/`, `/proxy/${foreign.port}x/`]) {
      const refused = await fetch(`${service.url}/vscode/${editor.port}${path}`);
      expect(refused.status, path).toBe(403);
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('PORT_NOT_FORWARDED');
    }
  });
});

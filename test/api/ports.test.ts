// GET /servers/{id}/ports against the running service: the ports a server's programs listen on now
// (never another server's, the editor's own or the service's), the ports its devcontainer.json
// (from an uploaded ZIP) declares with their attributes, each with the proxy address it answers
// at; read with the access rules of GET /servers/{id}.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { portViews } from '../../src/api/routes/ports.ts';
import { freePort } from '../helpers/net.ts';
import { startPortProgram, type PortProgram } from '../helpers/port-program.ts';
import { eventually, startTestService, type TestService } from '../helpers/service.ts';
import { buildZip } from '../workspace/zip-fixtures.ts';

const ALICE = { 'X-Forwarded-Email': 'alice@example.com' };
const BOB = { 'X-Forwarded-Email': 'bob@example.com' };

let service: TestService;
let alpha: { id: string; port: number; manifest: string };
const programs: PortProgram[] = [];

async function program(server?: string): Promise<PortProgram> {
  const started = await startPortProgram({ server });
  programs.push(started);
  return started;
}

const portsOf = async (id: string, who = ALICE) => service.request('GET', `/servers/${id}/ports`, undefined, who);

beforeAll(async () => {
  service = await startTestService({ requireIdentity: true, config: { access: 'owner', admins: [] } });
  // A name no other test's server has: a program is a server's by its DEVBOX_SERVER_NAME, on the machine every test shares.
  const created = await service.request('POST', '/servers', { name: `Alpha ${randomUUID().slice(0, 8)}` }, ALICE);
  expect((await service.request('POST', `/servers/${created.body.id}/start`, undefined, ALICE)).status).toBe(200);
  const record = await service.request('GET', `/servers/${created.body.id}`, undefined, ALICE);
  alpha = { id: created.body.id, port: created.body.port, manifest: record.body.manifest };
});

afterAll(async () => {
  await Promise.all(programs.map((p) => p.stop()));
  await service?.stop();
});

describe('GET /servers/{id}/ports', () => {
  it('lists the ports the server\'s programs listen on, with the address each answers at, and no other program\'s', async () => {
    const before = await portsOf(alpha.id);
    expect(before.status).toBe(200);
    // The editor's own port is the server's program too, and never listed.
    expect(before.body).toEqual([]);
    const mine = await program(alpha.manifest);
    const theirs = await program('someone-else');
    const listed = await eventually(async () => {
      const { body } = await portsOf(alpha.id);
      return body.length > 0 && body;
    });
    expect(listed).toEqual([{
      port: mine.port, label: null, protocol: 'http', onAutoForward: 'notify', declared: false, listening: true,
      url: `/vscode/${alpha.port}/proxy/${mine.port}/`,
    }]);
    expect(listed.map((p: { port: number }) => p.port)).not.toContain(theirs.port);
    // The address answers, through the proxy, from that very program.
    const through = await fetch(service.url + listed[0].url, { headers: ALICE });
    expect(await through.json()).toMatchObject({ pid: mine.pid, url: '/' });
  });

  it('drops a port once its program stops', async () => {
    const short = await program(alpha.manifest);
    await eventually(async () => (await portsOf(alpha.id)).body.some((p: { port: number }) => p.port === short.port));
    await short.stop();
    await eventually(async () => !(await portsOf(alpha.id)).body.some((p: { port: number }) => p.port === short.port));
  });

  it('answers a stranger and an unknown id as GET /servers/{id} does: 404', async () => {
    const server = await service.request('GET', `/servers/${alpha.id}`, undefined, BOB);
    const ports = await portsOf(alpha.id, BOB);
    expect(ports.status).toBe(404);
    expect(ports.body.error).toEqual(server.body.error);
    expect((await portsOf('00000000-0000-4000-8000-00000000dead')).status).toBe(404);
  });

  it('lists the ports devcontainer.json declares, with portsAttributes, listening or not', async () => {
    const declaredFree = 20;
    const foreign = await program();
    const own = await freePort();
    const devcontainer = JSON.stringify({
      forwardPorts: [foreign.port, declaredFree, own],
      portsAttributes: { [String(declaredFree)]: { label: 'Docs', protocol: 'https', onAutoForward: 'silent' }, [String(own)]: { label: 'App' } },
    });
    const form = new FormData();
    form.append('name', `Declared ${randomUUID().slice(0, 8)}`);
    // Two entries at the top: a single top folder would be taken for the archive's wrapper. JSON with comments, as the reference allows.
    const zip = buildZip([{ name: '.devcontainer/devcontainer.json', data: `// ports\n${devcontainer}` }, { name: 'main.py', data: 'print(1)\n' }]);
    form.append('zip_file', new Blob([zip]), 'project.zip');
    const created = await fetch(`${service.url}/servers/create-with-workspace`, { method: 'POST', body: form, headers: ALICE });
    expect(created.status).toBe(201);
    const { id, port } = (await created.json()) as { id: string; port: number };
    expect((await service.request('POST', `/servers/${id}/start`, undefined, ALICE)).status).toBe(200);
    const manifest = (await service.request('GET', `/servers/${id}`, undefined, ALICE)).body.manifest;
    const app = await startPortProgram({ server: manifest, port: own });
    programs.push(app);
    const listed = await eventually(async () => {
      const { body } = await portsOf(id);
      return body.length === 3 && body[2].listening && body;
    }, 15_000);
    const url = (p: number) => `/vscode/${port}/proxy/${p}/`;
    expect(listed).toEqual([
      // A program of no server listens on it: not this server's, so not listening for it.
      { port: foreign.port, label: null, protocol: 'http', onAutoForward: 'notify', declared: true, listening: false, url: url(foreign.port) },
      { port: declaredFree, label: 'Docs', protocol: 'https', onAutoForward: 'silent', declared: true, listening: false, url: url(declaredFree) },
      { port: own, label: 'App', protocol: 'http', onAutoForward: 'notify', declared: true, listening: true, url: url(own) },
    ]);
    const through = await fetch(service.url + url(own), { headers: ALICE });
    expect(await through.json()).toMatchObject({ pid: app.pid });
  });
});

describe('portViews', () => {
  it('gives the declared ports in the file\'s order, then the others listening by number, each once', () => {
    const views = portViews(8012, [{ port: 5000, label: 'API' }, { port: 3000 }], new Set([9000, 3000, 4000]));
    expect(views.map((v) => [v.port, v.declared, v.listening])).toEqual([[5000, true, false], [3000, true, true], [4000, false, true], [9000, false, true]]);
    expect(views[0]).toEqual({ port: 5000, label: 'API', protocol: 'http', onAutoForward: 'notify', declared: true, listening: false, url: '/vscode/8012/proxy/5000/' });
  });
});

// A team sharing one app, against the running service with identity required: every server
// records who created it; with `access: owner` a user sees and drives only their own servers
// (REST, log streams and editor proxy alike) and an admin every one; with `shared` everyone
// drives everything; an edit of the config file switches between them while the service runs.
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { parse, stringify } from 'yaml';
import { freePort, opened } from '../helpers/net.ts';
import { eventually, portRange, startTestService, type TestService } from '../helpers/service.ts';
import { writeTemplate, writeWhole } from '../templates/fixtures.ts';
import { buildZip } from '../workspace/zip-fixtures.ts';

const ALICE = { 'X-Forwarded-Email': 'alice@example.com', 'X-Forwarded-User': '1001@42' };
// The platform forwards the email as the user typed it: the owner is recorded in lower case.
const BOB = { 'X-Forwarded-Email': 'Bob@Example.com', 'X-Forwarded-User': '1002@42' };
const ADMIN = { 'X-Forwarded-Email': 'root@example.com', 'X-Forwarded-User': '1000@42' };
type Who = Record<string, string>;

const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';

let service: TestService;
let configFile: string;
let ports: { min: number; max: number };
/** Alice's server, started; Bob's, stopped. */
let alices: { id: string; port: number; pid: number };
let bobs: { id: string; port: number };

/** Writes the config file whole (renamed into place, as editors save) with this policy. */
async function writeConfig(access: string, admins = ['Root@Example.com']): Promise<void> {
  await writeWhole(configFile, stringify({
    ports,
    editor: { stopGraceSeconds: 2, startTimeoutSeconds: 15 },
    controller: { resyncSeconds: 5, statsIntervalSeconds: 0.5 },
    access,
    admins,
  }));
}

/** Edits the policy and waits until the service has applied it (its log says so). */
async function switchTo(access: 'shared' | 'owner'): Promise<void> {
  const from = access === 'owner' ? 'shared' : 'owner';
  const said = service.lines.filter((line) => line.includes(`access: "${from}" -> "${access}"`)).length;
  await writeConfig(access);
  await eventually(() => service.lines.filter((line) => line.includes(`access: "${from}" -> "${access}"`)).length > said);
}

const as = (who: Who) => (method: string, path: string, body?: unknown) => service.request(method, path, body, who);
const wsUrl = (path: string) => service.url.replace('http', 'ws') + path;

/**
 * A WebSocket handshake as this user: the status it was refused with, or the open socket and
 * the frames it receives (collected from the first, as a log stream's replay follows the 101 at once).
 */
function handshake(path: string, who: Who): Promise<{ status?: number; ws?: WebSocket; frames: any[] }> {
  const ws = new WebSocket(wsUrl(path), { headers: who });
  const frames: any[] = [];
  ws.on('message', (data) => frames.push(JSON.parse(String(data))));
  return new Promise((resolve, reject) => {
    ws.once('unexpected-response', (_req, res) => resolve({ status: res.statusCode, frames }));
    ws.once('open', () => resolve({ ws, frames }));
    ws.once('error', reject);
  });
}

beforeAll(async () => {
  const root = await fs.mkdtemp(join(tmpdir(), 'devbox-access-'));
  configFile = join(root, 'devbox.config.yaml');
  ports = portRange();
  await writeConfig('owner');
  const templatesDir = join(root, 'templates');
  await fs.mkdir(templatesDir, { recursive: true });
  await writeTemplate(templatesDir, 'plain', { tab: 'General' });
  service = await startTestService({ root, configFile, templatesDir, requireIdentity: true });
  const created = await as(ALICE)('POST', '/servers', { name: 'Alice box' });
  const started = await as(ALICE)('POST', `/servers/${created.body.id}/start`);
  expect(started.status).toBe(200);
  alices = { id: created.body.id, port: created.body.port, pid: started.body.data.pid };
  const bob = await as(BOB)('POST', '/servers', { name: 'Bob box' });
  bobs = { id: bob.body.id, port: bob.body.port };
});
afterAll(async () => {
  await service?.stop();
});

describe('the owner of a server', () => {
  it('is the signed-in user who created it, in lower case, in the manifest and in the record', async () => {
    const record = await as(ALICE)('GET', `/servers/${alices.id}`);
    expect(record.body.owner).toBe('alice@example.com');
    expect((await as(BOB)('GET', `/servers/${bobs.id}`)).body.owner).toBe('bob@example.com');
    const manifest = parse(await fs.readFile(join(service.settings.manifestsDir, `${record.body.manifest}.yaml`), 'utf8'));
    expect(manifest.metadata.annotations).toEqual({ 'devbox.dev/owner': 'alice@example.com' });
  });

  it('is recorded by every create route: create-metadata, create-with-workspace and create-from-template', async () => {
    const metadata = await as(BOB)('POST', '/servers/create-metadata', { name: 'Bob steps' });
    expect(metadata.status).toBe(201);
    const form = new FormData();
    form.append('name', 'Bob upload');
    form.append('zip_file', new Blob([buildZip([{ name: 'README.md', data: '# hi\n' }])]), 'project.zip');
    const uploaded = await fetch(`${service.url}/servers/create-with-workspace`, { method: 'POST', body: form, headers: BOB });
    expect(uploaded.status).toBe(201);
    const upload = (await uploaded.json()) as { id: string };
    const templated = await as(BOB)('POST', '/servers/create-from-template', { name: 'Bob template', template_id: 'plain' });
    expect(templated.status).toBe(201);
    for (const id of [metadata.body.id, upload.id, templated.body.id]) {
      expect((await as(BOB)('GET', `/servers/${id}`)).body.owner, id).toBe('bob@example.com');
      expect((await as(BOB)('DELETE', `/servers/${id}`)).status).toBe(200);
    }
    const manifest = parse(await fs.readFile(join(service.settings.manifestsDir, `${(await as(BOB)('GET', `/servers/${bobs.id}`)).body.manifest}.yaml`), 'utf8'));
    expect(manifest.metadata.annotations['devbox.dev/owner']).toBe('bob@example.com');
  });

  it('refuses a create whose identity header is not an email or user id, and writes nothing', async () => {
    const before = await fs.readdir(service.settings.manifestsDir);
    for (const email of ['eve@example.com", "devbox.dev/owner": "alice@example.com', `${'e'.repeat(250)}@example.com`, 'eve@example.com, alice@example.com']) {
      const res = await service.request('POST', '/servers', { name: 'Hostile' }, { 'X-Forwarded-Email': email });
      expect(res.status, email).toBe(400);
      expect(res.body.error.code).toBe('INVALID_IDENTITY');
      expect(res.body.error.message).toContain('X-Forwarded-Email');
    }
    expect(await fs.readdir(service.settings.manifestsDir)).toEqual(before);
  });
});

describe('access: owner', () => {
  it('lists only the user their own servers, and an admin every server', async () => {
    const ids = async (who: Who) => ((await as(who)('GET', '/servers')).body as { id: string }[]).map((s) => s.id);
    expect(await ids(ALICE)).toEqual([alices.id]);
    expect(await ids(BOB)).toEqual([bobs.id]);
    expect((await ids(ADMIN)).sort()).toEqual([alices.id, bobs.id].sort());
    const manifests = ((await as(BOB)('GET', '/manifests')).body as { id: string }[]).map((m) => m.id);
    expect(manifests).toEqual([bobs.id]);
  });

  it("answers every route on another user's server as it answers an unknown id, and leaves the server alone", async () => {
    const routes: [string, string, unknown?][] = [
      ['GET', ''], ['POST', '/start'], ['POST', '/stop'], ['POST', '/restart'], ['DELETE', ''],
      ['GET', '/logs'], ['GET', '/health'], ['POST', '/refresh-status'],
      ['POST', '/install-extension', { extension: 'redhat.vscode-yaml' }], ['POST', '/install-extensions', { extensions: ['redhat.vscode-yaml'] }],
      ['POST', '/apply-group-settings', { groupName: 'git' }],
    ];
    for (const [method, tail, body] of routes) {
      const theirs = await as(BOB)(method, `/servers/${alices.id}${tail}`, body);
      const unknown = await as(BOB)(method, `/servers/${UNKNOWN_ID}${tail}`, body);
      expect(theirs.status, `${method} ${tail}`).toBe(404);
      expect(theirs.body.error.code).toBe('SERVER_NOT_FOUND');
      expect(theirs.body.error.message.replace(alices.id, UNKNOWN_ID)).toBe(unknown.body.error.message);
    }
    const form = new FormData();
    form.append('github_url', 'https://example.com/repo.git');
    const clone = await fetch(`${service.url}/servers/${alices.id}/clone-workspace`, { method: 'POST', body: form, headers: BOB });
    expect(clone.status).toBe(404);
    const refreshed = await as(BOB)('POST', '/servers/refresh-all');
    expect(refreshed.body.servers.map((s: { id: string }) => s.id)).toEqual([bobs.id]);
    // A port of another's server is not named when it is refused.
    const taken = await as(BOB)('POST', '/servers', { name: 'Port thief', port: alices.port });
    expect(taken.status).toBe(409);
    expect(taken.body.error.message).not.toContain('Alice box');

    const still = await as(ALICE)('GET', `/servers/${alices.id}`);
    expect(still.body).toMatchObject({ status: 'running', pid: alices.pid, extensions: [] });
  });

  it("refuses another user's editor as a port it does not manage, over HTTP and WebSocket; the owner's gets through", async () => {
    const unmanaged = await freePort();
    for (const prefix of ['vscode', 'editor']) {
      const theirs = await fetch(`${service.url}/${prefix}/${alices.port}/`, { headers: BOB });
      const none = await fetch(`${service.url}/${prefix}/${unmanaged}/`, { headers: BOB });
      expect(theirs.status).toBe(404);
      expect((await theirs.text()).replace(String(alices.port), 'N')).toBe((await none.text()).replace(String(unmanaged), 'N'));
      const own = await fetch(`${service.url}/${prefix}/${alices.port}/`, { headers: ALICE });
      expect(own.status).toBe(200);
      expect(await own.text()).toContain('stub editor');
    }
    expect((await handshake(`/vscode/${alices.port}/echo`, BOB)).status).toBe(404);
    const { ws } = await handshake(`/vscode/${alices.port}/echo`, ALICE);
    ws!.removeAllListeners('message');
    const reply = new Promise<string>((resolve) => ws!.once('message', (data) => resolve(String(data))));
    ws!.send('through the proxy');
    expect(await reply).toBe('through the proxy');
    ws!.close();
  });

  it("refuses another user's log stream, and /ws/logs carries only the user's own servers' lines", async () => {
    expect((await handshake(`/ws/logs/${alices.id}`, BOB)).status).toBe(404);
    const { ws: own, frames: ownFrames } = await handshake(`/ws/logs/${alices.id}?tail=5`, ALICE);
    await eventually(() => ownFrames.length === 5);

    const { ws: bobAll, frames: bobFrames } = await handshake('/ws/logs?tail=1000', BOB);
    const { ws: adminAll, frames: adminFrames } = await handshake('/ws/logs?tail=1000', ADMIN);
    // A line of Alice's server, then one of Bob's: streams send in order, so once Bob has his, he would have had hers.
    expect((await as(ALICE)('POST', `/servers/${alices.id}/restart`)).status).toBe(200);
    await eventually(() => ownFrames.some((f) => f.message.includes('stopping')));
    const marker = (await as(BOB)('POST', '/servers', { name: 'Bob marker' })).body;
    await eventually(() => bobFrames.some((f) => f.server_id === marker.id));
    await eventually(() => adminFrames.some((f) => f.server_id === marker.id));
    expect(bobFrames.filter((f) => f.server_id === alices.id)).toEqual([]);
    expect(bobFrames.some((f) => f.server_id === bobs.id)).toBe(true);
    expect(adminFrames.some((f) => f.server_id === alices.id && f.message.includes('stopping'))).toBe(true);
    for (const ws of [own, bobAll, adminAll]) ws!.close();
    expect((await as(BOB)('DELETE', `/servers/${marker.id}`)).status).toBe(200);
    alices.pid = (await as(ALICE)('GET', `/servers/${alices.id}`)).body.pid;
  });

  it('lets an admin see and drive every server, and the servers nobody owns, which only admins see', async () => {
    const admin = as(ADMIN);
    expect((await admin('GET', `/servers/${alices.id}/logs`)).status).toBe(200);
    expect((await admin('POST', `/servers/${bobs.id}/start`)).status).toBe(200);
    expect((await fetch(`${service.url}/vscode/${bobs.port}/`, { headers: ADMIN })).status).toBe(200);
    expect((await admin('POST', `/servers/${bobs.id}/stop`)).status).toBe(200);

    // Written by hand: one without an owner, one naming Alice in another case.
    const manifest = (name: string, annotations?: Record<string, string>) =>
      stringify({ apiVersion: 'devbox.dev/v1alpha1', kind: 'EditorServer', metadata: { name, ...(annotations ? { annotations } : {}) }, spec: { running: false } });
    await fs.writeFile(join(service.settings.manifestsDir, 'by-hand.yaml'), manifest('by-hand'));
    await fs.writeFile(join(service.settings.manifestsDir, 'for-alice.yaml'), manifest('for-alice', { 'devbox.dev/owner': ' Alice@Example.COM ' }));
    const listed = await eventually(async () => {
      const all = (await admin('GET', '/servers')).body as { id: string; manifest: string; owner: string | null }[];
      return all.some((s) => s.manifest === 'by-hand') && all.some((s) => s.manifest === 'for-alice') ? all : undefined;
    });
    const byHand = listed.find((s) => s.manifest === 'by-hand')!;
    const forAlice = listed.find((s) => s.manifest === 'for-alice')!;
    expect(byHand.owner).toBeNull();
    expect(forAlice.owner).toBe('alice@example.com');
    const alicesList = ((await as(ALICE)('GET', '/servers')).body as { id: string }[]).map((s) => s.id);
    expect(alicesList.sort()).toEqual([alices.id, forAlice.id].sort());
    expect((await as(ALICE)('GET', `/servers/${byHand.id}`)).status).toBe(404);
    for (const s of [byHand, forAlice]) expect((await admin('DELETE', `/servers/${s.id}`)).status).toBe(200);
  });
});

describe('access: shared, and switching by editing the config file', () => {
  it('lets every user see and drive every server once the file says shared, and hides them again once it says owner', async () => {
    await switchTo('shared');
    const bob = as(BOB);
    const listed = ((await bob('GET', '/servers')).body as { id: string; owner: string }[]);
    expect(listed.find((s) => s.id === alices.id)?.owner).toBe('alice@example.com');
    expect((await bob('POST', `/servers/${alices.id}/stop`)).status).toBe(200);
    const started = await bob('POST', `/servers/${alices.id}/start`);
    expect(started.status).toBe(200);
    const page = await fetch(`${service.url}/vscode/${alices.port}/`, { headers: BOB });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('stub editor');
    const stream = await handshake(`/ws/logs/${alices.id}`, BOB);
    expect(stream.status).toBeUndefined();
    stream.ws!.close();

    await switchTo('owner');
    expect(((await bob('GET', '/servers')).body as { id: string }[]).map((s) => s.id)).toEqual([bobs.id]);
    expect((await bob('GET', `/servers/${alices.id}`)).status).toBe(404);
    expect((await fetch(`${service.url}/vscode/${alices.port}/`, { headers: BOB })).status).toBe(404);
    expect((await as(ALICE)('GET', `/servers/${alices.id}`)).body.status).toBe('running');
  });

  it('keeps the policy in force when an edit names one that does not exist, or an admin that is no user, and says where', async () => {
    const problemsOf = async (write: () => Promise<void>) => {
      await write();
      return eventually(async () => {
        const { body } = await as(ADMIN)('GET', '/config');
        return body.source.errors.length > 0 ? body.source.errors : undefined;
      });
    };
    expect(await problemsOf(() => writeConfig('everyone'))).toEqual([
      { file: configFile, line: expect.any(Number), column: expect.any(Number), problem: 'access: must be equal to one of the allowed values (shared, owner)' },
    ]);
    await writeConfig('owner');
    await eventually(async () => (await as(ADMIN)('GET', '/config')).body.source.errors.length === 0);
    expect(await problemsOf(() => writeConfig('shared', ['root example']))).toEqual([
      { file: configFile, line: expect.any(Number), column: expect.any(Number), problem: expect.stringMatching(/^admins\.0: "root example" is not an email address or user id/) },
    ]);
    expect(((await as(BOB)('GET', '/servers')).body as { id: string }[]).map((s) => s.id)).toEqual([bobs.id]);
    await writeConfig('owner');
    await eventually(async () => (await as(ADMIN)('GET', '/config')).body.source.errors.length === 0);
  });
});

describe('locally, where no one signs in', () => {
  it('does not apply access: owner to requests without identity, and says so in the log at start', async () => {
    const local = await startTestService({ config: { access: 'owner', admins: [] } });
    try {
      expect(local.lines.some((line) => line.includes('access is "owner", but identity is not required here'))).toBe(true);
      const created = await local.request('POST', '/servers', { name: 'Mine' }, ALICE);
      expect(created.status).toBe(201);
      const all = await local.request('GET', '/servers');
      expect(all.body.map((s: { id: string; owner: string }) => [s.id, s.owner])).toEqual([[created.body.id, 'alice@example.com']]);
      expect((await local.request('GET', `/servers/${created.body.id}`)).status).toBe(200);
      const plain = await local.request('POST', '/servers', { name: 'Nobody' });
      expect((await local.request('GET', `/servers/${plain.body.id}`)).body.owner).toBeNull();
    } finally {
      await local.stop();
    }
  });
});

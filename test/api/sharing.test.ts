// Sharing a server with named people, against the running service with identity required and
// `access: owner`: the owner shares and revokes through /servers/{id}/access, the list is written to
// the manifest, shared people drive the server but neither delete it nor change who has access,
// and a person it is not shared with is refused at every door (API, editor proxy and its WebSocket,
// logs and their streams, the watch stream) with nothing about the server in the answer; in after
// a share, out again after a revoke, their open editor closed. Locally, sharing is refused.
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { parse, stringify } from 'yaml';
import { freePort } from '../helpers/net.ts';
import { eventually, portRange, startTestService, type TestService } from '../helpers/service.ts';
import { openWatch, type WatchStream } from '../helpers/watch-stream.ts';
import { writeWhole } from '../templates/fixtures.ts';

const ALICE = { 'X-Forwarded-Email': 'alice@example.com', 'X-Forwarded-User': '1001@42' };
const BOB = { 'X-Forwarded-Email': 'Bob@Example.com', 'X-Forwarded-User': '1002@42' };
const CAROL = { 'X-Forwarded-Email': 'carol@example.com', 'X-Forwarded-User': '1003@42' };
const ADMIN = { 'X-Forwarded-Email': 'root@example.com', 'X-Forwarded-User': '1000@42' };
type Who = Record<string, string>;

const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';

let service: TestService;
/** Alice's server, running. */
let alices: { id: string; port: number; manifest: string };
const streams: WatchStream[] = [];

const as = (who: Who) => (method: string, path: string, body?: unknown) => service.request(method, path, body, who);
const manifestOf = async () => parse(await fs.readFile(join(service.settings.manifestsDir, `${alices.manifest}.yaml`), 'utf8'));

/** A WebSocket handshake as this user: the status it was refused with and the body, or the open socket and its frames. */
function handshake(path: string, who: Who): Promise<{ status?: number; body?: string; ws?: WebSocket; frames: string[] }> {
  const ws = new WebSocket(service.url.replace('http', 'ws') + path, { headers: who });
  const frames: string[] = [];
  ws.on('message', (data) => frames.push(String(data)));
  return new Promise((resolve, reject) => {
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (chunk) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode, body, frames }));
    });
    ws.once('open', () => resolve({ ws, frames }));
    ws.once('error', reject);
  });
}

/** Sends a text through an open editor WebSocket (the stub editor echoes it) and waits for it back. */
async function echoes(ws: WebSocket, text: string): Promise<boolean> {
  const reply = new Promise<string>((resolve) => ws.once('message', (data) => resolve(String(data))));
  ws.send(text);
  return (await reply) === text;
}

let configFile: string;
const ports = portRange();

/** Writes the config file whole (renamed into place, as editors save) with this policy. */
async function writeConfig(access: 'owner' | 'shared'): Promise<void> {
  await writeWhole(configFile, stringify({
    ports,
    editor: { stopGraceSeconds: 2, startTimeoutSeconds: 15 },
    controller: { resyncSeconds: 5, statsIntervalSeconds: 0.5 },
    access,
    admins: ['root@example.com'],
  }));
}

beforeAll(async () => {
  const root = await fs.mkdtemp(join(tmpdir(), 'devbox-sharing-'));
  configFile = join(root, 'devbox.config.yaml');
  await writeConfig('owner');
  service = await startTestService({ root, configFile, requireIdentity: true });
  const created = await as(ALICE)('POST', '/servers', { name: 'Alice box' });
  expect((await as(ALICE)('POST', `/servers/${created.body.id}/start`)).status).toBe(200);
  const record = (await as(ALICE)('GET', `/servers/${created.body.id}`)).body;
  alices = { id: record.id, port: record.port, manifest: record.manifest };
});
afterAll(async () => {
  for (const stream of streams) stream.close();
  await service?.stop();
});

describe('sharing a server with named people', () => {
  it('shares with a person as their sign-on names them, in the manifest; they see it marked shared and drive it, but may not delete it or change who has access', async () => {
    const shared = await as(ALICE)('POST', `/servers/${alices.id}/access`, { person: ' Bob@Example.COM ' });
    expect(shared.status).toBe(200);
    expect(shared.body.data).toEqual({ owner: 'alice@example.com', shared_with: ['bob@example.com'], shared: false, can_change: true, effective: true, warning: null });
    expect((await manifestOf()).spec.access).toEqual({ sharedWith: ['bob@example.com'] });
    // Shared again: nothing changes, nothing is written twice.
    const generation = (await manifestOf()).metadata.generation;
    expect((await as(ALICE)('POST', `/servers/${alices.id}/access`, { person: 'bob@example.com' })).body.data.shared_with).toEqual(['bob@example.com']);
    expect((await manifestOf()).metadata.generation).toBe(generation);

    const bob = as(BOB);
    const listed = (await bob('GET', '/servers')).body as { id: string; owner: string; shared_with: string[] }[];
    expect(listed.map((s) => [s.id, s.owner, s.shared_with])).toEqual([[alices.id, 'alice@example.com', ['bob@example.com']]]);
    expect((await bob('GET', `/servers/${alices.id}/access`)).body.data).toMatchObject({ shared: true, can_change: false });
    expect((await as(ALICE)('GET', `/servers/${alices.id}/access`)).body.data).toMatchObject({ shared: false, can_change: true });
    expect((await bob('POST', `/servers/${alices.id}/stop`)).status).toBe(200);
    expect((await bob('POST', `/servers/${alices.id}/start`)).status).toBe(200);
    expect((await bob('GET', `/servers/${alices.id}/logs`)).status).toBe(200);
    expect((await bob('GET', `/servers/${alices.id}/events`)).status).toBe(200);
    const page = await fetch(`${service.url}/vscode/${alices.port}/`, { headers: BOB });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('stub editor');

    for (const [method, tail, body] of [
      ['DELETE', ''], ['POST', '/access', { person: 'carol@example.com' }], ['PUT', '/access', { shared_with: [] }], ['DELETE', '/access/bob@example.com'],
    ] as [string, string, unknown?][]) {
      const refused = await bob(method, `/servers/${alices.id}${tail}`, body);
      expect(refused.status, `${method} ${tail}`).toBe(403);
      expect(refused.body.error.code).toBe('OWNER_ONLY');
      expect(refused.body.error.message).toMatch(/^only the owner of server "Alice box" or an admin may (delete it|change who has access to it)/);
    }
    expect((await as(ALICE)('GET', `/servers/${alices.id}`)).body.status).toBe('running');
    expect((await manifestOf()).spec.access).toEqual({ sharedWith: ['bob@example.com'] });
  });

  it('refuses a person who is no email or user id, the owner, and a list past 100 people, naming the field, and writes nothing', async () => {
    const before = await manifestOf();
    const refusals: [string, unknown, RegExp][] = [
      ['POST', { person: 'bob smith' }, /^person: "bob smith" is not an email address or user id/],
      ['POST', { person: 'bob@example.com, eve@example.com' }, /^person: .* is not an email address or user id/],
      ['POST', { person: 'Alice@example.com' }, /^person: alice@example.com owns server "Alice box"/],
      ['POST', { people: ['bob@example.com'] }, /person/],
      ['PUT', { shared_with: ['carol@example.com', 'eve <eve@example.com>'] }, /^shared_with\/1: "eve <eve@example.com>" is not an email address or user id/],
      ['PUT', { shared_with: Array.from({ length: 101 }, (_, i) => `p${i}@example.com`) }, /shared_with.*100/],
    ];
    for (const [method, body, message] of refusals) {
      const res = await as(ALICE)(method, `/servers/${alices.id}/access`, body);
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(res.body.error.code).toBe('INVALID_BODY');
      expect(res.body.error.message).toMatch(message);
    }
    expect(await manifestOf()).toEqual(before);
  });

  it('lets an admin change who has access to anyone\'s server; the list is replaced whole, repeats counted once', async () => {
    const replaced = await as(ADMIN)('PUT', `/servers/${alices.id}/access`, { shared_with: ['Carol@example.com', 'carol@example.com', 'bob@example.com'] });
    expect(replaced.status).toBe(200);
    expect(replaced.body.data).toMatchObject({ shared_with: ['carol@example.com', 'bob@example.com'], can_change: true, shared: false });
    expect((await manifestOf()).spec.access.sharedWith).toEqual(['carol@example.com', 'bob@example.com']);
    expect((await as(CAROL)('GET', `/servers/${alices.id}`)).status).toBe(200);
    expect((await as(ADMIN)('PUT', `/servers/${alices.id}/access`, { shared_with: ['bob@example.com'] })).status).toBe(200);
    expect((await as(CAROL)('GET', `/servers/${alices.id}`)).status).toBe(404);
  });
});

describe('the audit trail of sharing', () => {
  it('records each share and revoke with who, the door and the outcome, a refused one too', async () => {
    // Bob may use the server (as the tests above leave it), not change who has access to it.
    expect((await as(ALICE)('POST', `/servers/${alices.id}/access`, { person: 'bob@example.com' })).status).toBe(200);
    expect((await as(ALICE)('POST', `/servers/${alices.id}/access`, { person: 'dave@example.com' })).status).toBe(200);
    expect((await as(BOB)('DELETE', `/servers/${alices.id}/access/dave@example.com`)).status).toBe(403);
    expect((await as(ALICE)('DELETE', `/servers/${alices.id}/access/dave@example.com`)).status).toBe(200);
    const entries = await eventually(async () => {
      const page = await as(ADMIN)('GET', `/audit?server=${alices.id}&action=share,revoke`);
      const found = (page.body.entries as { actor: string; action: string; door: string; outcome: string; detail: string | null; error_code?: string | null }[])
        .filter((e) => e.detail?.includes('dave@example.com'));
      return found.length === 3 ? found : undefined;
    });
    // Newest first.
    expect(entries.map((e) => [e.actor, e.action, e.door, e.outcome])).toEqual([
      ['alice@example.com', 'revoke', 'api', 'ok'],
      ['bob@example.com', 'revoke', 'api', 'refused'],
      ['alice@example.com', 'share', 'api', 'ok'],
    ]);
    expect(entries.map((e) => e.detail)).toEqual(['from dave@example.com', 'from dave@example.com', 'with dave@example.com']);
  });
});

describe('a person the server is not shared with', () => {
  it('is refused at every door with nothing about the server; in after a share; out again after a revoke, their open editor closed', async () => {
    const carol = as(CAROL);
    expect((await as(ALICE)('PUT', `/servers/${alices.id}/access`, { shared_with: ['bob@example.com'] })).status).toBe(200);
    const secrets = ['Alice box', alices.manifest, String(alices.port), 'alice'];
    const revealsNothing = (text: string, what: string) => {
      for (const secret of secrets) expect(text.toLowerCase(), `${what} names ${secret}`).not.toContain(secret.toLowerCase());
    };
    const watch = await openWatch(service.url, CAROL);
    streams.push(watch);
    await watch.next((e) => e.type === 'SYNCED');

    const routes: [string, string, unknown?][] = [
      ['GET', ''], ['DELETE', ''], ['POST', '/start'], ['POST', '/stop'], ['POST', '/restart'],
      ['GET', '/logs'], ['GET', '/events'], ['GET', '/health'], ['POST', '/refresh-status'], ['GET', '/manifest'],
      ['GET', '/snapshots'], ['POST', '/snapshot'], ['POST', '/restore', {}],
      ['POST', '/install-extension', { extension: 'redhat.vscode-yaml' }],
      ['GET', '/access'], ['POST', '/access', { person: 'carol@example.com' }], ['PUT', '/access', { shared_with: ['carol@example.com'] }],
      ['DELETE', '/access/bob@example.com'],
    ];
    const refusedEverywhere = async () => {
      for (const [method, tail, body] of routes) {
        const theirs = await carol(method, `/servers/${alices.id}${tail}`, body);
        const unknown = await carol(method, `/servers/${UNKNOWN_ID}${tail}`, body);
        expect(theirs.status, `${method} ${tail}`).toBe(404);
        expect(JSON.stringify(theirs.body).replaceAll(alices.id, UNKNOWN_ID), `${method} ${tail}`).toBe(JSON.stringify(unknown.body));
        revealsNothing(JSON.stringify(theirs.body).replaceAll(alices.id, ''), `${method} ${tail}`);
      }
      expect(((await carol('GET', '/servers')).body as { id: string }[]).map((s) => s.id)).not.toContain(alices.id);
      const unmanaged = await freePort();
      for (const prefix of ['vscode', 'editor']) {
        const theirs = await fetch(`${service.url}/${prefix}/${alices.port}/`, { headers: CAROL });
        const none = await fetch(`${service.url}/${prefix}/${unmanaged}/`, { headers: CAROL });
        expect(theirs.status).toBe(404);
        const text = await theirs.text();
        expect(text.replaceAll(String(alices.port), 'N')).toBe((await none.text()).replaceAll(String(unmanaged), 'N'));
        revealsNothing(text.replaceAll(String(alices.port), ''), `/${prefix}/`);
      }
      const editorSocket = await handshake(`/vscode/${alices.port}/echo`, CAROL);
      expect(editorSocket.status).toBe(404);
      revealsNothing(editorSocket.body!.replaceAll(String(alices.port), ''), 'the editor WebSocket');
      const logStream = await handshake(`/ws/logs/${alices.id}?tail=100`, CAROL);
      expect(logStream.status).toBe(404);
      revealsNothing(logStream.body!.replaceAll(alices.id, ''), 'the log stream');
      // The stream of every server's logs carries none of hers (her editor has logged since it started).
      const allLogs = await handshake('/ws/logs?tail=1000', CAROL);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(allLogs.frames.filter((f) => f.includes(alices.id))).toEqual([]);
      allLogs.ws!.close();
    };

    await refusedEverywhere();
    expect(watch.events.filter((e) => e.object?.id === alices.id)).toEqual([]);

    // Shared: every door opens.
    expect((await as(ALICE)('POST', `/servers/${alices.id}/access`, { person: 'carol@example.com' })).status).toBe(200);
    expect((await carol('GET', `/servers/${alices.id}`)).body.shared_with).toEqual(['bob@example.com', 'carol@example.com']);
    expect((await carol('GET', `/servers/${alices.id}/access`)).body.data).toMatchObject({ shared: true, can_change: false });
    expect((await carol('GET', `/servers/${alices.id}/logs`)).status).toBe(200);
    expect((await carol('GET', `/servers/${alices.id}/events`)).status).toBe(200);
    const page = await fetch(`${service.url}/vscode/${alices.port}/`, { headers: CAROL });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('stub editor');
    const { ws: editor } = await handshake(`/vscode/${alices.port}/echo`, CAROL);
    expect(await echoes(editor!, 'typed by carol')).toBe(true);
    const { ws: logs, frames } = await handshake(`/ws/logs/${alices.id}?tail=5`, CAROL);
    await eventually(() => frames.length > 0);
    await watch.next((e) => e.type === 'ADDED' && e.object.id === alices.id);
    logs!.close();

    // Revoked: out again, and the editor she had open is closed.
    const revoked = await as(ALICE)('DELETE', `/servers/${alices.id}/access/Carol@Example.com`);
    expect(revoked.status).toBe(200);
    expect(revoked.body.data.shared_with).toEqual(['bob@example.com']);
    await eventually(() => editor!.readyState === WebSocket.CLOSED, 10_000);
    await watch.next((e) => e.type === 'DELETED' && e.object.id === alices.id);
    await refusedEverywhere();
    // Bob's access and Alice's editor are as they were.
    expect((await as(BOB)('GET', `/servers/${alices.id}`)).status).toBe(200);
    expect((await as(ALICE)('GET', `/servers/${alices.id}`)).body.status).toBe('running');
  });
});

/** The manifest text with spec.access.sharedWith written as a person would. */
function withSharedWith(text: string, people: string[]): string {
  const manifest = parse(text);
  manifest.spec.access = { sharedWith: people };
  return stringify(manifest);
}

describe('an editor opened while the policy let everyone in', () => {
  it('is closed when the config file says access: owner again, unless it is shared with its person', async () => {
    expect((await as(ALICE)('PUT', `/servers/${alices.id}/access`, { shared_with: ['bob@example.com'] })).status).toBe(200);
    const said = () => service.lines.filter((line) => line.includes('access: "shared" -> "owner"')).length;
    const before = said();
    await writeConfig('shared');
    await eventually(async () => (await as(CAROL)('GET', `/servers/${alices.id}`)).status === 200);
    const { ws: carols } = await handshake(`/vscode/${alices.port}/echo`, CAROL);
    const { ws: bobs } = await handshake(`/vscode/${alices.port}/echo`, BOB);
    expect(await echoes(carols!, 'carol, while shared')).toBe(true);
    // Everyone drives it now, but who has access stays its owner's word.
    const refused = await as(CAROL)('POST', `/servers/${alices.id}/access`, { person: 'carol@example.com' });
    expect(refused.status).toBe(403);
    expect((await as(CAROL)('GET', `/servers/${alices.id}/access`)).body.data).toMatchObject({
      can_change: false, effective: false, warning: expect.stringContaining('access: shared'),
    });
    await writeConfig('owner');
    await eventually(() => said() > before);
    await eventually(() => carols!.readyState === WebSocket.CLOSED, 10_000);
    // Bob's stays: the server is shared with him.
    expect(await echoes(bobs!, 'bob, still in')).toBe(true);
    bobs!.close();
  });
});

describe('a hand-written spec.access.sharedWith', () => {
  it('takes effect once the file says so, in any case, and stops once it no longer does', async () => {
    const file = join(service.settings.manifestsDir, `${alices.manifest}.yaml`);
    const text = await fs.readFile(file, 'utf8');
    await fs.writeFile(file, withSharedWith(text, ['bob@example.com', 'Carol@Example.COM']));
    const seen = await eventually(async () => {
      const res = await as(CAROL)('GET', `/servers/${alices.id}`);
      return res.status === 200 ? res.body : undefined;
    });
    expect(seen.shared_with).toEqual(['bob@example.com', 'carol@example.com']);
    expect((await fetch(`${service.url}/vscode/${alices.port}/`, { headers: CAROL })).status).toBe(200);
    await fs.writeFile(file, text);
    await eventually(async () => (await as(CAROL)('GET', `/servers/${alices.id}`)).status === 404);
    expect((await fetch(`${service.url}/vscode/${alices.port}/`, { headers: CAROL })).status).toBe(404);
  });

  it('is refused when an entry is no identity, the manifest problem naming the field, and the server stays as it was', async () => {
    const file = join(service.settings.manifestsDir, `${alices.manifest}.yaml`);
    const text = await fs.readFile(file, 'utf8');
    await fs.writeFile(file, withSharedWith(text, ['bob@example.com', 'carol example']));
    const problems = await eventually(async () => {
      const all = (await as(ADMIN)('GET', '/manifests')).body as { name: string; errors: string[] }[];
      const mine = all.find((m) => m.name === alices.manifest);
      return mine && mine.errors.length > 0 ? mine.errors : undefined;
    });
    expect(problems.join('\n')).toMatch(/spec\.access\.sharedWith\.1/);
    expect((await as(CAROL)('GET', `/servers/${alices.id}`)).status).toBe(404);
    await fs.writeFile(file, text);
    await eventually(async () => ((await as(ADMIN)('GET', '/manifests')).body as { name: string; errors: string[] }[])
      .find((m) => m.name === alices.manifest)?.errors.length === 0);
  });
});

describe('a deleted server kept at the persistence target', () => {
  it('is brought back by its owner only, not by someone it was shared with or anyone else', async () => {
    const keep = await fs.mkdtemp(join(tmpdir(), 'devbox-sharing-keep-'));
    const kept = await startTestService({ requireIdentity: true, persistTo: keep, config: { access: 'owner', admins: [] } });
    try {
      const box = (await kept.request('POST', '/servers', { name: 'Kept box' }, ALICE)).body;
      await kept.request('POST', `/servers/${box.id}/access`, { person: 'bob@example.com' }, ALICE);
      expect((await kept.request('DELETE', `/servers/${box.id}`, undefined, BOB)).status).toBe(403);
      expect((await kept.request('DELETE', `/servers/${box.id}`, undefined, ALICE)).status).toBe(200);
      await eventually(async () => ((await kept.request('GET', '/snapshots/deleted', undefined, ALICE)).body.data?.servers ?? [])
        .some((s: { name: string }) => s.name === 'kept-box'));
      // Bob, whom it was shared with, knows of it but may not bring it back; Carol, whom it never
      // was, is not told it is kept: she neither sees it listed nor gets an answer other than for
      // a name never deleted.
      const refused = await kept.request('POST', '/snapshots/deleted/kept-box/restore', undefined, BOB);
      expect(refused.status).toBe(403);
      expect(refused.body.error).toMatchObject({ code: 'OWNER_ONLY', message: expect.stringMatching(/^only the owner of server "kept-box" or an admin may undelete it/) });
      const unknown = await kept.request('POST', '/snapshots/deleted/never-was/restore', undefined, CAROL);
      const hidden = await kept.request('POST', '/snapshots/deleted/kept-box/restore', undefined, CAROL);
      expect([hidden.status, hidden.body.error.code]).toEqual([404, 'NOT_DELETED']);
      expect(hidden.body.error.message).toBe(unknown.body.error.message.replace('never-was', 'kept-box'));
      for (const who of [BOB, CAROL]) {
        const listed = await kept.request('GET', '/snapshots/deleted', undefined, who);
        expect(listed.status).toBe(200);
        expect(JSON.stringify(listed.body)).not.toContain('kept-box');
      }
      expect((await kept.request('GET', '/servers', undefined, ALICE)).body).toEqual([]);
      const back = await kept.request('POST', '/snapshots/deleted/kept-box/restore', undefined, ALICE);
      expect(back.status, JSON.stringify(back.body)).toBe(201);
      expect((await kept.request('GET', `/servers/${box.id}`, undefined, BOB)).body.shared_with).toEqual(['bob@example.com']);
    } finally {
      await kept.stop();
      await fs.rm(keep, { recursive: true, force: true });
    }
  });
});

describe('locally, where no one signs in', () => {
  it('refuses to share, saying why and how to turn sign-on on; a hand-written list is kept and said to have no effect', async () => {
    const local = await startTestService({ config: { access: 'owner', admins: [] } });
    try {
      const created = await local.request('POST', '/servers', { name: 'Mine' });
      const refused = await local.request('POST', `/servers/${created.body.id}/access`, { person: 'bob@example.com' });
      expect(refused.status).toBe(409);
      expect(refused.body.error.code).toBe('SHARING_NEEDS_SIGN_ON');
      expect(refused.body.error.message).toContain('DEVBOX_REQUIRE_IDENTITY=1');
      expect((await local.request('PUT', `/servers/${created.body.id}/access`, { shared_with: [] })).status).toBe(409);
      expect((await local.request('DELETE', `/servers/${created.body.id}/access/bob@example.com`)).status).toBe(409);

      const file = join(local.settings.manifestsDir, `${created.body.manifest ?? 'mine'}.yaml`);
      const manifest = parse(await fs.readFile(file, 'utf8'));
      manifest.spec.access = { sharedWith: ['bob@example.com'] };
      await fs.writeFile(file, stringify(manifest));
      const record = await eventually(async () => {
        const res = await local.request('GET', `/servers/${created.body.id}`);
        return res.body.shared_with?.length === 1 ? res.body : undefined;
      });
      expect(record.shared_with).toEqual(['bob@example.com']);
      const view = (await local.request('GET', `/servers/${created.body.id}/access`)).body.data;
      expect(view).toMatchObject({ shared_with: ['bob@example.com'], effective: false, can_change: false });
      expect(view.warning).toMatch(/no one signs in on this run.*no effect/);
    } finally {
      await local.stop();
    }
  });
});

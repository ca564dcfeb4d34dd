// The promise "nothing a person declared or wrote is lost", as a property: random operations on
// a fleet (creates by the API, a template, a ZIP, git and a hand-written file; edits by hand and
// through the API; start, stop, an editor killed, delete, undelete; files written in running
// workspaces), SIGTERM at a random point (at once after an operation, or once things settle),
// then a redeploy on an empty machine. The restored fleet equals the fleet before the SIGTERM:
// names, ids, ports, manifests (so specs, and running or stopped), every workspace byte; each
// server settles as its manifest says. With both targets: a folder and the fake Files API.
//
// `npm test` runs one fixed seed per target. A longer run: DEVBOX_MODEL_SEEDS=50 (seeds from
// DEVBOX_MODEL_SEED on, default 20261129) and DEVBOX_MODEL_OPS=40 (operations before the SIGTERM
// at most) with `npx vitest run test/persistence/fleet-model.test.ts`. A failure names its seed
// and the operations it ran.
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { postForm } from '../helpers/form.ts';
import { prng } from '../helpers/prng.ts';
import { eventually, portRange, processExists, type TestService } from '../helpers/service.ts';
import { manifest } from '../gitops/repos.ts';
import { writeTemplate, writeWhole } from '../templates/fixtures.ts';
import { makeRepo, serveGitDaemon, type GitDaemon } from '../workspace/git-fixtures.ts';
import { buildZip } from '../workspace/zip-fixtures.ts';
import { fleetOf, makeTarget, scratch, sigterm, startOn, wipe, type SeenServer, type Target, type TargetKind } from './redeploy-fixtures.ts';

const FIRST_SEED = Number(process.env.DEVBOX_MODEL_SEED ?? 20261129);
const SEEDS = Number(process.env.DEVBOX_MODEL_SEEDS ?? 1);
const MAX_OPS = Number(process.env.DEVBOX_MODEL_OPS ?? 24);

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

interface World {
  base: string;
  target: Target;
  daemon: GitDaemon;
  templatesDir: string;
  ports: { min: number; max: number };
}

async function world(kind: TargetKind): Promise<World> {
  const base = await scratch(`devbox-model-${kind}-`);
  cleanups.push(() => fs.rm(base, { recursive: true, force: true }));
  const target = await makeTarget(kind, base);
  cleanups.push(() => target.close());
  await makeRepo(join(base, 'repos'), 'project');
  const daemon = await serveGitDaemon(join(base, 'repos'));
  cleanups.push(() => daemon.stop());
  const templatesDir = join(base, 'templates');
  await fs.mkdir(templatesDir);
  await writeTemplate(templatesDir, 'course', { name: 'Course', tab: 'Teaching', spec: { settings: { 'editor.fontSize': 15 } } });
  return { base, target, daemon, templatesDir, ports: portRange() };
}

function open(w: World): Promise<TestService> {
  return startOn(w.target, join(w.base, 'machine'), cleanups, { templatesDir: w.templatesDir, config: { ports: w.ports } });
}

/** One random run: the operations done, and the fleet before the SIGTERM and after the redeploy. */
async function run(w: World, seed: number): Promise<{ ops: string[]; before: Record<string, SeenServer>; after: Record<string, SeenServer> }> {
  const random = prng(seed);
  const int = (n: number) => Math.floor(random() * n);
  const pick = <T>(items: readonly T[]): T | undefined => (items.length === 0 ? undefined : items[int(items.length)]);
  const service = await open(w);
  const ops: string[] = [];
  let counter = 0;
  const ok = (what: string, answer: { status: number; body: any }, ...statuses: number[]) => {
    expect(statuses.length > 0 ? statuses : [200, 201], `${what}: ${JSON.stringify(answer.body)}\n${ops.join('\n')}`).toContain(answer.status);
    return answer.body;
  };
  const servers = async () => (await service.request('GET', '/servers')).body as Array<{ id: string; manifest: string; status: string; pid: number | null; workspace_path: string }>;
  const deleted = new Set<string>();
  const file = (name: string) => join(service.settings.manifestsDir, `${name}.yaml`);

  const operations: Record<string, () => Promise<string | undefined>> = {
    async createByApi() {
      const name = `Api ${++counter}`;
      ok(name, await service.request('POST', '/servers', { name }));
      return name;
    },
    async createFromTemplate() {
      const name = `Course ${++counter}`;
      ok(name, await service.request('POST', '/servers/create-from-template', { name, template_id: 'course', tab_name: 'Teaching' }));
      return name;
    },
    async createFromZip() {
      const name = `Zip ${++counter}`;
      const zip = buildZip([{ name: 'README.md', data: `# ${name}\n` }, { name: `data/${int(1000)}.csv`, data: `x\n${random()}\n` }]);
      ok(name, await postForm(`${service.url}/servers/create-with-workspace`, { name, extensions: '[]' }, zip));
      return name;
    },
    async createFromGit() {
      const name = `Git ${++counter}`;
      ok(name, await postForm(`${service.url}/servers/create-with-workspace`, { name, extensions: '[]', github_url: w.daemon.url('project') }));
      return name;
    },
    async createByHand() {
      const name = `hand-${++counter}`;
      await writeWhole(file(name), manifest(name, { running: random() < 0.3, displayName: `Hand ${counter}` }));
      return name;
    },
    async editByHand() {
      const names = (await fs.readdir(service.settings.manifestsDir)).filter((f) => f.endsWith('.yaml')).map((f) => f.slice(0, -5));
      const name = pick(names);
      if (!name) return undefined;
      const text = await fs.readFile(file(name), 'utf8');
      const edited = text.replace(/displayName: .*/, `displayName: Edited ${++counter}`)
        .replace(/running: (true|false)/, () => `running: ${random() < 0.4}`);
      await writeWhole(file(name), edited);
      return name;
    },
    async editByApi() {
      const server = pick(await servers());
      if (!server) return undefined;
      ok('install-extension', await service.request('POST', `/servers/${server.id}/install-extension`, { extension: pick(['acme.quick', 'acme.lint', 'acme.theme'])! }), 200, 202, 404, 409);
      return server.manifest;
    },
    async start() {
      const server = pick((await servers()).filter((s) => s.status === 'stopped'));
      if (!server) return undefined;
      ok('start', await service.request('POST', `/servers/${server.id}/start`), 200, 202, 404, 409);
      return server.manifest;
    },
    async stop() {
      const server = pick((await servers()).filter((s) => s.status === 'running'));
      if (!server) return undefined;
      ok('stop', await service.request('POST', `/servers/${server.id}/stop`), 200, 202, 404, 409);
      return server.manifest;
    },
    async killEditor() {
      const server = pick((await servers()).filter((s) => s.status === 'running' && s.pid));
      if (!server || !processExists(server.pid!)) return undefined;
      process.kill(server.pid!, 'SIGKILL');
      // Files are written only into running editors (as a person does, through one): the crash is
      // seen before the next operation, so none is written into a workspace whose editor just died.
      await eventually(async () => (await servers()).find((s) => s.manifest === server.manifest)?.pid !== server.pid || undefined, 20_000);
      return server.manifest;
    },
    async deleteServer() {
      const server = pick(await servers());
      if (!server) return undefined;
      ok('delete', await service.request('DELETE', `/servers/${server.id}`), 200, 202, 404);
      deleted.add(server.manifest);
      return server.manifest;
    },
    async undelete() {
      const present = new Set((await servers()).map((s) => s.manifest));
      const name = pick([...deleted].filter((n) => !present.has(n)));
      if (!name) return undefined;
      const kept = (await service.request('GET', '/snapshots/deleted')).body.data?.servers as Array<{ name: string }> | undefined;
      if (!kept?.some((s) => s.name === name)) return undefined;
      ok('undelete', await service.request('POST', `/snapshots/deleted/${name}/restore`), 200, 201);
      deleted.delete(name);
      return name;
    },
    async writeFiles() {
      const server = pick((await servers()).filter((s) => s.status === 'running'));
      if (!server) return undefined;
      for (let i = int(4); i >= 0; i--) {
        const path = join(server.workspace_path, pick(['', 'src', 'notes/deep'])!, `file-${int(6)}.txt`);
        await fs.mkdir(join(path, '..'), { recursive: true });
        await fs.writeFile(path, `${seed} ${counter++} ${random()}\n`.repeat(1 + int(200)));
      }
      return server.manifest;
    },
  };
  const weights: Array<[keyof typeof operations, number]> = [
    ['createByApi', 3], ['createFromTemplate', 1], ['createFromZip', 1], ['createFromGit', 1], ['createByHand', 2],
    ['editByHand', 3], ['editByApi', 1], ['start', 3], ['stop', 2], ['killEditor', 1], ['deleteServer', 1], ['undelete', 1], ['writeFiles', 4],
  ];
  const total = weights.reduce((sum, [, n]) => sum + n, 0);
  const count = 1 + int(MAX_OPS);
  for (let i = 0; i < count; i++) {
    let roll = int(total);
    // The first creates a server, so every run has a fleet to keep.
    const [op] = i === 0 ? [pick(['createByApi', 'createFromTemplate', 'createFromZip', 'createFromGit', 'createByHand'] as const)!] : weights.find(([, n]) => (roll -= n) < 0)!;
    const on = await operations[op]();
    ops.push(`${op}${on === undefined ? ' (nothing to do it to)' : ` ${on}`}`);
  }
  // The SIGTERM comes at once after the last operation, or once everything has settled.
  if (random() < 0.5) {
    ops.push('…settled');
    await eventually(async () => (await service.request('GET', '/health')).body.persistence?.declared_behind === 0 || undefined, 20_000);
  }
  ops.push('SIGTERM');
  const before = await fleetOf(service);
  // A file written by hand that the controller has not read yet is declared too: it comes back, with a new id.
  for (const name of (await fs.readdir(service.settings.manifestsDir)).filter((f) => f.endsWith('.yaml')).map((f) => f.slice(0, -5))) {
    before[name] ??= { id: '(new)', name: '', port: 0, status: '', manifest: await fs.readFile(file(name), 'utf8'), workspace: [] };
  }
  await sigterm(service);
  await wipe(service);

  const second = await open(w);
  // Every server settles as its manifest says: running ones run again, stopped ones stay stopped.
  for (const [name, server] of Object.entries(before)) {
    const wanted = /running: true/.test(server.manifest) ? 'running' : 'stopped';
    await eventually(async () => {
      const record = (await second.request('GET', '/servers')).body.find((s: { manifest: string }) => s.manifest === name);
      const restored = record?.conditions?.some((c: { type: string; status: string }) => c.type === 'Restored' && c.status === 'True');
      const settled = record?.phase === (wanted === 'running' ? 'Running' : 'Stopped');
      return restored && settled && record.status === wanted && record.workspace_path && (wanted === 'stopped' || record.pid) ? true : undefined;
    }, 60_000).catch(() => {
      throw new Error(`seed ${seed}: ${name} did not come back ${wanted}\n${ops.join('\n')}`);
    });
  }
  const after = await fleetOf(second);
  for (const [name, server] of Object.entries(before)) {
    // Read by the controller after the SIGTERM's look: kept by its text, given an id and port after.
    if (server.id === '(new)') before[name] = { ...after[name], manifest: server.manifest };
    // Not given a port yet when the SIGTERM came: any port after.
    else if (server.port === null && after[name]) server.port = after[name].port;
  }
  // The manifest text says the display name and running or stopped; what the records said right
  // before the SIGTERM may lag a hand edit made a moment before, so those are compared through it.
  for (const server of [...Object.values(before), ...Object.values(after)]) Object.assign(server, { name: '', status: '' });
  return { ops, before, after };
}

/** What differs, server by server, in a line each (the full diff follows in the failure). */
function differences(before: Record<string, SeenServer>, after: Record<string, SeenServer>): string[] {
  const lines: string[] = [];
  for (const name of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const [b, a] = [before[name], after[name]];
    if (!a || !b) {
      lines.push(`${name}: ${a ? 'came back though gone before' : 'did not come back'}`);
      continue;
    }
    const fields = (Object.keys(b) as Array<keyof SeenServer>).filter((k) => JSON.stringify(a[k]) !== JSON.stringify(b[k]));
    const files = (s: SeenServer) => s.workspace.map(([path]) => path).join(', ') || 'no files';
    if (fields.length > 0) lines.push(`${name}: ${fields.join(', ')} differ${fields.includes('workspace') ? ` (before: ${files(b)}; after: ${files(a)})` : ''}`);
  }
  return lines;
}

const tried = { runs: 0, operations: 0, acted: 0 };
afterAll(() => {
  // The long run says what it tried, for its report.
  if (SEEDS > 1) console.log(`fleet model: ${tried.runs} runs, ${tried.operations} operations (${tried.acted} acted on a server; the rest found none to act on)`);
});

describe.each<TargetKind>(['folder', 'volume'])('the fleet across a redeploy, with a %s as the target', (kind) => {
  for (let seed = FIRST_SEED; seed < FIRST_SEED + SEEDS; seed++) {
    it(`comes back as it was before the SIGTERM after random operations (seed ${seed}, at most ${MAX_OPS} operations)`, async () => {
      const w = await world(kind);
      const { ops, before, after } = await run(w, seed);
      const done = ops.filter((op) => op !== 'SIGTERM' && op !== '…settled');
      Object.assign(tried, { runs: tried.runs + 1, operations: tried.operations + done.length, acted: tried.acted + done.filter((op) => !op.includes('nothing to do')).length });
      expect(after, `seed ${seed}:\n${ops.join('\n')}\n${differences(before, after).join('\n')}`).toEqual(before);
    }, 240_000);
  }
});

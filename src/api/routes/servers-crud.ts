// GET /servers, GET /servers/{id} and POST /servers: list, read and create servers.
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { Router, type Request, type Response } from 'express';
import { unknownExtensionGroups } from '../../config/settings.ts';
import type { ServerRecord } from '../../index/records.ts';
import { apiError } from '../../core/error-catalogue.ts';
import { API_VERSION, displayNameOf, KIND, type EditorServer, type EditorServerSpec, type RestartPolicy } from '../../manifests/types.ts';
import { OWNER_ANNOTATION } from '../access.ts';
import { slugify } from '../naming.ts';
import { quotaExceeded } from '../quota-errors.ts';
import { ServerFeed } from '../server-feed.ts';
import { parsePageQuery, ServerPages } from '../server-pages.ts';
import { checkBody, checkSettings, compileBodySchema } from '../validation.ts';
import { createdView, serverView } from '../views.ts';
import { findServer, folderMissing, phaseIs, type ServersDeps } from './context.ts';

export interface CreateBody {
  name: string;
  extensions?: string[];
  extension_groups?: string[];
  port?: number;
  restart_policy?: RestartPolicy;
  settings?: Record<string, unknown>;
}

/** How long POST /servers waits for the port and workspace before answering with what it has. */
const CREATE_WAIT_MS = 10_000;
/** How long POST /servers waits for extension installs before answering 201 while they go on. */
const INSTALL_GRACE_MS = 2_000;

const validateCreate = compileBodySchema<CreateBody>('create-server.schema.json');

export function serversCrudRoutes(deps: ServersDeps, router: Router): void {
  const { index, stats } = deps;

  const pages = new ServerPages(index, (name, now) => {
    const entry = deps.feed?.entryOf(name);
    if (entry) return ServerFeed.current(entry, now);
    const record = index.records.get(name);
    return record?.server ? JSON.stringify(serverView(record, record.server.status?.runtimeRef ? stats.get(name) : undefined)) : undefined;
  });

  router.get('/servers', (req, res) => {
    // Undefined while the requester may see every server: the listing costs nothing more then.
    const sees = deps.access.filterFor(req);
    // A page, or a filtered list (src/api/server-pages.ts): the token of the next one in X-Continue.
    const query = parsePageQuery(req.query as Record<string, unknown>);
    if (query) {
      const page = pages.page(query, sees);
      if (page.next !== undefined) res.set({ 'X-Continue': page.next, 'Access-Control-Expose-Headers': 'X-Continue' });
      sendJson(res, page.body);
      return;
    }
    // The same bytes as below, from records serialised once per change (uptime spliced in).
    if (deps.feed) {
      sendJson(res, deps.feed.list(sees));
      return;
    }
    const list = [...index.records.values()]
      .filter((r) => r.server?.metadata.uid && (!sees || sees(r.server)))
      .map((r) => serverView(r, r.server!.status?.runtimeRef ? stats.get(r.name) : undefined));
    res.json(list);
  });

  router.get('/servers/:id', (req, res) => {
    const record = findServer(deps, req);
    const entry = deps.feed?.entryOf(record.name);
    if (entry) {
      sendJson(res, ServerFeed.current(entry));
      return;
    }
    res.json(serverView(record, record.server!.status?.runtimeRef ? stats.get(record.name) : undefined));
  });

  router.post('/servers', async (req, res) => {
    res.status(201).json(await createServer(deps, req, checkCreateBody(deps, req.body)));
  });
}

/** Sends JSON text as res.json would send the value it came from. */
function sendJson(res: Response, body: string): void {
  if (!res.get('Content-Type')) res.set('Content-Type', 'application/json');
  res.send(body);
}

/** Checks a POST /servers body: its schema, the settings limits, groups the config defines; 400 or 413 saying what to change. */
export function checkCreateBody(deps: ServersDeps, raw: unknown): CreateBody {
  const body = checkBody(validateCreate, raw);
  checkSettings(body.settings);
  const problem = unknownGroupsProblem(deps, body.extension_groups);
  if (problem !== undefined) throw apiError('INVALID_BODY', `extension_groups: ${problem}`);
  return body;
}

/** Which of `names` the config (as it is now) does not define, and which it does; undefined when it defines them all. */
export function unknownGroupsProblem(deps: ServersDeps, names: string[] | undefined): string | undefined {
  const unknownGroups = unknownExtensionGroups(deps.extensionGroups, names);
  if (unknownGroups.length === 0) return undefined;
  return `unknown group ${unknownGroups.map((g) => `"${g}"`).join(', ')}; the config defines ${Object.keys(deps.extensionGroups).join(', ') || 'none'}`;
}

/**
 * Writes a new, stopped server's manifest (its port claimed first) and waits, bounded, for the
 * controller to give it its port and workspace; answers the created record either way.
 * The body must have been checked already; `more` adds to the spec (a workspace source), and
 * `annotations` go into the manifest's metadata (the template it came from), with the owner:
 * the user `req` comes from.
 */
export async function createServer(deps: ServersDeps, req: Request, body: CreateBody, more: Partial<EditorServerSpec> = {}, annotations: Record<string, string> = {}) {
  const { store, index, commands } = deps;
  const owned = { ...annotations, ...deps.access.ownerAnnotations(req) };
  const displayName = body.name.trim();
  const uid = randomUUID();
  const base = slugify(displayName);
  let name = base;
  const server: EditorServer = {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: { name, uid, ...(Object.keys(owned).length > 0 ? { annotations: owned } : {}) },
    spec: {
      displayName,
      running: false,
      ...(body.port !== undefined ? { port: body.port } : {}),
      ...(body.restart_policy ? { restartPolicy: body.restart_policy } : {}),
      ...(body.extension_groups ? { extensionGroups: body.extension_groups } : {}),
      extensions: body.extensions ?? [],
      ...(body.settings ? { settings: body.settings } : {}),
      ...more,
    },
  };
  // The port is held before the manifest exists, so two creates never both get one, and a
  // full range is refused at once. It is held under a key no server name can be, and handed
  // to the name the moment its file exists.
  const ports = deps.ports;
  const claim = `create:${uid}`;
  if (body.port !== undefined) {
    const excluded = deps.excludedPort(body.port);
    if (excluded !== undefined) throw apiError('PORT_TAKEN', `port ${body.port} is ${excluded}: choose another port or leave it out`);
    // A server the requester may not see is not named.
    const holder = (name: string) => {
      const held = index.records.get(name)?.server;
      return deps.access.sees(req, held) ? `belongs to server "${held ? displayNameOf(held) : name}"` : 'is taken by another server';
    };
    const holding = [...index.records.values()].find((r) => r.server && (r.server.spec.port ?? r.server.status?.port) === body.port);
    if (holding) throw apiError('PORT_TAKEN', `port ${body.port} ${holder(holding.name)}: choose another port or leave it out`);
    if (!ports.reserve(claim, body.port)) {
      const held = ports.owner(body.port);
      throw apiError('PORT_TAKEN', held?.startsWith('create:')
        ? `port ${body.port} is being given to another server created just now: choose another port or leave it out`
        : `port ${body.port} ${holder(held ?? '')}: choose another port or leave it out`);
    }
  } else if ((await ports.allocate(claim)) === undefined) {
    const { min, max } = ports.range;
    throw apiError('NO_FREE_PORT', { min, max });
  }
  // Room for one more of the person's servers (capacity.perPerson.servers), held until the index has it.
  const quota = deps.quotas?.claimServer(owned[OWNER_ANNOTATION]);
  const held = quota && !('refused' in quota) ? quota : undefined;
  try {
    if (quota && 'refused' in quota) throw quotaExceeded(`server "${displayName}" was not created`, quota.refused);
    // Claim a free name: data-pipeline, data-pipeline-2, … Folders (or a port) still held for
    // a name whose manifest went are never handed to a new server.
    for (let n = 1; ; n++) {
      if (n > 1) name = server.metadata.name = `${base}-${n}`;
      if (!existsSync(deps.layout.workspace(name)) && !existsSync(deps.layout.editor(name).root) && ports.portOf(name) === undefined
        && (await store.create(server, () => ports.transfer(claim, name)))) break;
      if (n > 1000) throw new Error(`could not find a free manifest name for "${displayName}"`);
    }
    held?.bind(name);
  } catch (error) {
    held?.release();
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      throw folderMissing(store);
    }
    throw error;
  } finally {
    ports.release(claim);
  }
  commands.enqueue(name);
  const settled = (r: ServerRecord | undefined) =>
    Boolean(r?.server?.status?.port && r.server.status.workspacePath) && !phaseIs('Pending', 'Provisioning')(r);
  // Quick installs are waited for; long ones are not: once they have run for INSTALL_GRACE_MS the
  // server is answered (status `stopped`, phase Provisioning), and status and the log show how far.
  const started = Date.now();
  let record = await commands.waitFor(name, settled, INSTALL_GRACE_MS);
  if (!settled(record)) {
    const installing = (r: ServerRecord | undefined) => r?.server?.status?.reason === 'InstallingExtensions';
    record = await commands.waitFor(name, (r) => settled(r) || installing(r), Math.max(deps.startTimeoutMs, CREATE_WAIT_MS) - (Date.now() - started));
  }
  // Created either way: the manifest is written and the controller will provision it. A busy
  // machine only means the answer comes before the controller has assigned a port.
  return createdView(record?.server ? record : { name, server });
}

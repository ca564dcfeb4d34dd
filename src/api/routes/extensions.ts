// The multi-step creation routes: create-metadata, install-extensions,
// install-extension and apply-group-settings. Each changes the spec, then waits (bounded) for the
// controller's outcome, like the lifecycle routes, and answers the envelope with the record and
// what happened to each extension the request named.
import type { Response, Router } from 'express';
import { unknownExtensionGroups } from '../../config/settings.ts';
import type { ServerRecord } from '../../index/records.ts';
import { apiError } from '../../core/error-catalogue.ts';
import { checkBody, compileBodySchema } from '../validation.ts';
import { envelope, findServer, phaseIs, updateSpec, type ServersDeps } from './context.ts';
import { createServer } from './servers-crud.ts';

/** How long a route waits for the installs it asked for; after that it answers 202 with how far they got. */
const INSTALL_WAIT_MS = 60_000;

const validateMetadata = compileBodySchema<{ name: string }>('create-metadata.schema.json');
const validateMany = compileBodySchema<{ extensions: string[] }>('install-extensions.schema.json');
const validateOne = compileBodySchema<{ extension: string }>('install-extension.schema.json');
const validateGroup = compileBodySchema<{ groupName?: string; group_name?: string }>('apply-group-settings.schema.json');

export function extensionRoutes(deps: ServersDeps, router: Router): void {
  router.post('/servers/create-metadata', async (req, res) => {
    const { name } = checkBody(validateMetadata, req.body);
    res.status(201).json(await createServer(deps, req, { name, extensions: [] }));
  });

  router.post('/servers/:id/install-extensions', async (req, res) => {
    const { extensions } = checkBody(validateMany, req.body);
    await addExtensions(deps, findServer(deps, req), extensions, res);
  });

  router.post('/servers/:id/install-extension', async (req, res) => {
    const { extension } = checkBody(validateOne, req.body);
    await addExtensions(deps, findServer(deps, req), [extension], res);
  });

  router.post('/servers/:id/apply-group-settings', async (req, res) => {
    const body = checkBody(validateGroup, req.body);
    const group = (body.groupName ?? body.group_name)!;
    const record = findServer(deps, req);
    if (unknownExtensionGroups(deps.extensionGroups, [group]).length > 0) {
      throw apiError('INVALID_BODY', `unknown extension group "${group}": the config defines ${Object.keys(deps.extensionGroups).join(', ') || 'none'}`);
    }
    await updateSpec(deps, record, (server, set) => {
      const groups = server.spec.extensionGroups ?? [];
      if (!groups.includes(group)) set(['spec', 'extensionGroups'], [...groups, group]);
    });
    await answerWhenInstalled(deps, record, deps.extensionGroups[group].extensions, res, `group "${group}"`);
  });
}

async function addExtensions(deps: ServersDeps, record: ServerRecord, ids: string[], res: Response): Promise<void> {
  await updateSpec(deps, record, (server, set) => {
    const current = server.spec.extensions ?? [];
    const added = ids.filter((id) => !current.includes(id));
    if (added.length > 0) set(['spec', 'extensions'], [...current, ...added]);
  });
  await answerWhenInstalled(deps, record, ids, res, ids.length === 1 ? ids[0] : `${ids.length} extensions`);
}

/**
 * Waits until every id has an outcome in status and the server is no longer provisioning:
 * 200 with each id's result then, 202 with those still pending when the wait ends. A failed
 * extension does not fail the request: its result says why.
 */
async function answerWhenInstalled(deps: ServersDeps, record: ServerRecord, ids: string[], res: Response, what: string): Promise<void> {
  const outcomes = (r: ServerRecord | undefined) => new Map((r?.server?.status?.extensions ?? []).map((e) => [e.id, e]));
  const settled = (r: ServerRecord | undefined) => {
    const known = outcomes(r);
    return ids.every((id) => known.has(id)) && !phaseIs('Pending', 'Provisioning')(r);
  };
  const done = (await deps.commands.waitFor(record.name, (r) => !r?.server || settled(r), INSTALL_WAIT_MS)) ?? record;
  const known = outcomes(done);
  const results = ids.map((id) => known.get(id) ?? { id, state: 'Pending' });
  const failed = results.filter((r) => r.state === 'Failed').map((r) => r.id);
  const finished = done.server !== undefined && settled(done);
  const message = !finished
    ? `${what}: still installing (${done.server?.status?.message ?? 'waiting for the controller'})`
    : failed.length > 0 ? `${what}: installed except ${failed.join(', ')} (see results)` : `${what}: installed`;
  res.status(finished ? 200 : 202).json({ ...envelope(done.server ? done : record, message), results });
}

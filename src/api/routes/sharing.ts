// Who besides its owner may open and use a server: GET, POST and PUT /servers/{id}/access and
// DELETE /servers/{id}/access/{person}, over spec.access.sharedWith; GET /me says who asks. A
// change is written to the manifest like every other edit, and answered once the service reads it
// back, so a revoke holds from its answer on. Only the owner and the admins change the list; where
// no one signs in there is nobody to share with, and the change is refused saying so.
import type { Request, Router } from 'express';
import { USER_SHAPE } from '../../config/settings.ts';
import { apiError, notFound } from '../../core/error-catalogue.ts';
import type { ServerRecord } from '../../index/records.ts';
import { displayNameOf, type EditorServer } from '../../manifests/types.ts';
import { MAX_SHARED_WITH, normaliseUser, ownerOf, sharedWithOf, type Requester, type ServerAccess } from '../access.ts';
import { checkBody, compileBodySchema } from '../validation.ts';
import { findServer, updateSpec, type ServersDeps } from './context.ts';

const validateShare = compileBodySchema<{ person: string }>('share-server.schema.json');
const validateReplace = compileBodySchema<{ shared_with: string[] }>('replace-access.schema.json');

/** How long a change waits for the service to read the manifest it wrote. */
const READ_BACK_MS = 10_000;

export function sharingRoutes(deps: ServersDeps, router: Router): void {
  const { access } = deps;

  // Who the requester is, as the access checks see them: the dashboard marks the servers shared with them.
  router.get('/me', (req, res) => {
    const who = access.requester(req.headers);
    res.json({
      status: 'success',
      data: { user: who.local ? null : who.user ?? null, admin: access.isAdmin(who), policy: access.policy, sign_on: access.signOn },
    });
  });

  router.get('/servers/:id/access', (req, res) => {
    const record = findServer(deps, req);
    res.json({ status: 'success', data: accessView(access, access.requester(req.headers), record.server!) });
  });

  router.post('/servers/:id/access', async (req, res) => {
    const { record, who } = mayChange(deps, req);
    const person = checkPerson(checkBody(validateShare, req.body).person, 'person', record.server!);
    const done = await writeSharedWith(deps, record, (current) => {
      if (current.includes(person)) return current;
      if (current.length >= MAX_SHARED_WITH) {
        throw apiError('INVALID_BODY', `server "${displayNameOf(record.server!)}" is shared with ${MAX_SHARED_WITH} people already, the most it may be: revoke someone first`);
      }
      return [...current, person];
    });
    res.json({ status: 'success', message: `server "${displayNameOf(done)}" is shared with ${person}`, data: accessView(access, who, done) });
  });

  router.put('/servers/:id/access', async (req, res) => {
    const { record, who } = mayChange(deps, req);
    const people = checkBody(validateReplace, req.body).shared_with.map((p, i) => checkPerson(p, `shared_with/${i}`, record.server!));
    const done = await writeSharedWith(deps, record, () => [...new Set(people)]);
    const count = sharedWithOf(done).size;
    res.json({
      status: 'success',
      message: `server "${displayNameOf(done)}" is shared with ${count === 0 ? 'nobody' : `${count} ${count === 1 ? 'person' : 'people'}`}`,
      data: accessView(access, who, done),
    });
  });

  router.delete('/servers/:id/access/:person', async (req, res) => {
    const { record, who } = mayChange(deps, req);
    const person = normaliseUser(String(req.params.person));
    const done = await writeSharedWith(deps, record, (current) => current.filter((p) => p !== person));
    res.json({ status: 'success', message: `${person} no longer has access to server "${displayNameOf(done)}"`, data: accessView(access, who, done) });
  });
}

/** What GET /servers/{id}/access answers: the list, the requester's part in it, and whether it holds here. */
export function accessView(access: ServerAccess, who: Requester, server: EditorServer) {
  const owner = ownerOf(server) ?? null;
  const user = who.local ? null : who.user ?? null;
  const sharedWith = [...sharedWithOf(server)];
  const warning = !access.signOn
    ? 'no one signs in on this run, so everyone reaches every server and this list has no effect: deploy the service as a Databricks app, '
      + 'or set DEVBOX_REQUIRE_IDENTITY=1 behind a proxy that signs users in'
    : access.policy !== 'owner'
      ? 'the config says access: shared, so every signed-in user reaches every server: this list takes effect under access: owner'
      : null;
  return {
    owner,
    shared_with: sharedWith,
    // Reached because it was shared with the requester, not because they own it or are an admin.
    shared: user !== null && user !== owner && sharedWith.includes(user) && !access.isAdmin(who),
    can_change: access.changesAccess(who, server),
    effective: warning === null,
    warning,
  };
}

/**
 * The server and who asks, when they may change its access: 409 where no one signs in, 403 for
 * anyone but its owner and the admins (under any policy).
 */
function mayChange(deps: ServersDeps, req: Request): { record: ServerRecord; who: Requester } {
  const record = findServer(deps, req);
  const who = deps.access.requester(req.headers);
  if (who.local) throw apiError('SHARING_NEEDS_SIGN_ON');
  if (!deps.access.changesAccess(who, record.server)) {
    throw apiError('OWNER_ONLY', { server: displayNameOf(record.server!), act: 'change who has access to it' });
  }
  return { record, who };
}

/** A person as the list keeps them (trimmed, lower case), or 400 naming the field and what is wrong. */
function checkPerson(raw: string, field: string, server: EditorServer): string {
  const person = normaliseUser(raw);
  if (!USER_SHAPE.test(person)) {
    throw apiError('INVALID_BODY', `${field}: ${JSON.stringify(raw)} is not an email address or user id (letters, digits and . _ % + - ' @): `
      + 'write it as the platform\'s sign-on forwards it, for example ada@example.com');
  }
  if (person === ownerOf(server)) {
    throw apiError('INVALID_BODY', `${field}: ${person} owns server "${displayNameOf(server)}" and has access to it always: name someone else`);
  }
  return person;
}

/**
 * Writes spec.access.sharedWith as `next` makes it from the list in the file now, then waits until
 * the service has read it back: every access check after the answer sees the new list.
 */
async function writeSharedWith(deps: ServersDeps, record: ServerRecord, next: (current: string[]) => string[]): Promise<EditorServer> {
  let written: string[] = [];
  await updateSpec(deps, record, (server, set) => {
    const current = [...sharedWithOf(server)];
    written = next(current);
    // The list as it is, already normalised, is left untouched (no write, no new generation).
    if (!sameList(server.spec.access?.sharedWith, written)) set(['spec', 'access', 'sharedWith'], written);
  });
  const wanted = new Set(written);
  const holds = (r: ServerRecord | undefined) => {
    const seen = sharedWithOf(r?.server);
    return !r?.server || (seen.size === wanted.size && [...wanted].every((p) => seen.has(p)));
  };
  const done = await deps.commands.waitFor(record.name, holds, READ_BACK_MS);
  if (!done?.server) throw notFound(record.server!.metadata.uid ?? record.name);
  if (!holds(done)) throw apiError('CONFLICT', 'the access list was written, but the service has not read it back yet: GET /servers/{id}/access in a moment shows it');
  return done.server;
}

function sameList(a: readonly string[] | undefined, b: readonly string[]): boolean {
  return (a ?? []).length === b.length && b.every((p, i) => a![i] === p);
}

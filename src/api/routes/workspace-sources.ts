// POST /servers/create-with-workspace and POST /servers/{id}/clone-workspace: multipart forms
// that give a server a workspace source (github_url, or zip_file streamed to disk and kept by its
// sha256). The source is checked before anything is written (400), put in spec.workspace.source, and the answer waits for the
// controller to populate the workspace. A create whose source cannot be applied is deleted again.
import { promises as fs } from 'node:fs';
import { Ajv, type ValidateFunction } from 'ajv';
import type { Request, RequestHandler, Router } from 'express';
import type multer from 'multer';
import type { ServerRecord } from '../../index/records.ts';
import { sameData } from '../../core/equal.ts';
import { apiError } from '../../core/error-catalogue.ts';
import { displayNameOf, type WorkspaceSource } from '../../manifests/types.ts';
import { describeErrors } from '../../core/schema-errors.ts';
import { readProjectJson } from '../../core/project.ts';
import { ArchiveError, planArchive } from '../../workspace/archive-source.ts';
import { storeArchive, uploadsDir } from '../../workspace/archives.ts';
import { gitUrlProblem } from '../../workspace/git-source.ts';
import { createdView } from '../views.ts';
import { envelope, findServer, updateSpec, type ServersDeps } from './context.ts';
import { createServer, unknownGroupsProblem, type CreateBody } from './servers-crud.ts';
import { checkSettings } from '../validation.ts';
import { requiredOnFirstUse } from '../../core/first-use.ts';

// Its own compiler: the shared one holds create-server's schema under its $id already. Compiled
// on the first form, like multer is required on the first form: neither is needed at rest.
let validateCreateFn: ValidateFunction<CreateBody> | undefined;
const validateCreate = () => (validateCreateFn ??= new Ajv({ allErrors: true, strict: true }).compile<CreateBody>(readProjectJson('schemas/api/create-server.schema.json')));
const loadMulter = requiredOnFirstUse<typeof multer>('multer');

/** A form field, or undefined; a field sent twice is refused (which one would count?). */
function field(req: Request, key: string): string | undefined {
  const value = (req.body as Record<string, unknown> | undefined)?.[key];
  if (Array.isArray(value)) throw apiError('INVALID_BODY', `the form field ${key} is given more than once: send it once`);
  return typeof value === 'string' ? value : undefined;
}

/** A form field holding JSON (blank = absent); 400 naming the field and an example otherwise. */
function jsonField(req: Request, key: string, what: string, example: string): unknown {
  const raw = field(req, key);
  if (raw === undefined || raw.trim() === '') return undefined;
  try {
    return JSON.parse(raw);
  } catch {
    throw apiError('INVALID_BODY', `${key} must be ${what} in a string, for example ${example}`);
  }
}

/** A branch or tag: the manifest schema's pattern, so what the form accepts a manifest accepts too. */
const GIT_REF = /^[A-Za-z0-9._/][A-Za-z0-9._/-]{0,199}$/;

export function workspaceSourceRoutes(deps: ServersDeps, router: Router): void {
  // Read per request: the config file can change while the service runs.
  const workspace = () => deps.workspace;
  const schemes = deps.gitSchemes;
  const timeoutMs = () => ((workspace()?.cloneTimeoutSeconds ?? 600) + 10) * 1000;
  const form = formParser(uploadsDir(deps.layout), () => workspace()?.maxUploadMb ?? 100);

  /** The source the form asks for, checked; 400 saying what to change otherwise. */
  async function sourceOf(req: Request): Promise<WorkspaceSource> {
    const url = field(req, 'github_url')?.trim();
    const ref = field(req, 'git_ref')?.trim() || undefined;
    if (req.file && url) throw apiError('INVALID_BODY', 'give either github_url or zip_file, not both');
    if (ref !== undefined && !url) throw apiError('INVALID_BODY', 'git_ref goes with github_url: give the repository URL too, or leave git_ref out');
    if (ref !== undefined && !GIT_REF.test(ref)) {
      throw apiError('INVALID_BODY', `git_ref: "${ref.slice(0, 80)}" is not a branch or tag name: use letters, digits, ".", "_", "/" and "-", not starting with "-" (at most 200 characters)`);
    }
    if (req.file) {
      try {
        planArchive(req.file.path);
      } catch (error) {
        if (error instanceof ArchiveError) throw apiError('INVALID_ARCHIVE', { problem: error.message });
        throw error;
      }
      return { archive: { sha256: await storeArchive(deps.layout, req.file.path) } };
    }
    if (!url) throw apiError('INVALID_BODY', 'give github_url (a git repository URL) or zip_file (a .zip archive)');
    const problem = gitUrlProblem(url, schemes());
    if (problem) throw apiError('INVALID_GIT_URL', { problem });
    return { git: { url, ...(ref !== undefined ? { ref } : {}) } };
  }

  router.post('/servers/create-with-workspace', form, async (req, res) => {
    const extensions = jsonField(req, 'extensions', 'a JSON array of extension ids', '["ms-python.python"]') ?? [];
    const groups = jsonField(req, 'extension_groups', 'a JSON array of group names', '["python", "git"]');
    const settings = jsonField(req, 'settings', 'a JSON object of editor settings', '{"editor.fontSize": 14}');
    const body = {
      name: field(req, 'name') ?? '', extensions,
      ...(groups !== undefined ? { extension_groups: groups } : {}),
      ...(settings !== undefined ? { settings } : {}),
    };
    const validate = validateCreate();
    if (!validate(body)) {
      const problems = describeErrors(validate.errors).map((p) => p.replace('(top level)', 'form'));
      throw apiError('INVALID_BODY', `the form is not valid: ${problems.join('; ')}`, { details: { problems } });
    }
    checkSettings(body.settings);
    const unknownGroups = unknownGroupsProblem(deps, body.extension_groups);
    if (unknownGroups !== undefined) throw apiError('INVALID_BODY', `extension_groups: ${unknownGroups}`);
    const source = await sourceOf(req);
    const created = await createServer(deps, req, body, { workspace: { source } });
    const record = await populated(deps, created.id!, timeoutMs());
    const failure = problemOf(record);
    if (failure !== undefined) {
      // No half-made server: the workspace could not be filled, so the server goes again.
      await deleteServer(deps, record!);
      throw apiError('WORKSPACE_SOURCE_FAILED', `${failure}; the server was not kept: fix the source and create it again`);
    }
    res.status(201).json(answer(record, created));
  });

  router.post('/servers/:id/clone-workspace', form, async (req, res) => {
    const record = findServer(deps, req);
    const source = await sourceOf(req);
    const workspace = deps.layout.workspace(record.name);
    const entries = await fs.readdir(workspace).catch(() => []);
    if (entries.length > 0) {
      throw apiError('WORKSPACE_NOT_EMPTY', { server: displayNameOf(record.server!), entries });
    }
    await updateSpec(deps, record, (_server, set) => set(['spec', 'workspace', 'source'], source));
    const outcome = await populated(deps, record.server!.metadata.uid!, timeoutMs());
    const failure = problemOf(outcome);
    if (failure !== undefined) {
      // The server stays as it was: without a source, so it is not retried behind the caller's back.
      await updateSpec(deps, outcome!, (server, set) => {
        if (sameData(server.spec.workspace?.source ?? null, source ?? null)) set(['spec', 'workspace'], {});
      });
      throw apiError('WORKSPACE_SOURCE_FAILED', `${failure}; the server is kept without a source: fix the source and try again`);
    }
    const current = outcome?.server ? outcome : record;
    res.status(200).json({ ...envelope(current, `workspace of server "${displayNameOf(current.server!)}" ${source.git ? `cloned from ${source.git.url}` : `extracted from the uploaded ZIP`}`), workspace_path: workspace });
  });
}

/** Why the source could not be applied, from status; undefined when it was (or is still going). */
function problemOf(record: ServerRecord | undefined): string | undefined {
  const status = record?.server?.status;
  if (status?.reason !== 'WorkspaceSourceFailed' && status?.reason !== 'WorkspaceSourceInvalid') return undefined;
  return (status.message ?? status.reason).replace(/; trying again in \d+ s$/, '');
}

function answer(record: ServerRecord | undefined, created: ReturnType<typeof createdView>) {
  const view = record?.server ? createdView(record) : created;
  const { id, name, port, workspace_path, status } = view;
  return { id, name, port, workspace_path, status };
}

/** Waits until the workspace is populated or the source failed (bounded by the clone timeout). */
async function populated(deps: ServersDeps, id: string, timeoutMs: number): Promise<ServerRecord | undefined> {
  const name = deps.index.nameOfUid(id);
  if (name === undefined) return undefined;
  return deps.commands.waitFor(name, (r) => {
    const status = r?.server?.status;
    if (!status) return r === undefined;
    if (problemOf(r) !== undefined) return true;
    const ready = status.conditions?.find((c) => c.type === 'WorkspaceReady');
    // Populated is enough: extension installs that follow show in status, not in this wait.
    return ready?.status === 'True' && ready.reason !== 'Created' && status.reason !== 'PopulatingWorkspace';
  }, timeoutMs);
}

/** Marks the server deleted and waits for the controller to remove it and its files. */
async function deleteServer(deps: ServersDeps, record: ServerRecord): Promise<void> {
  const { store, commands } = deps;
  const result = await store.update(record.name, (doc, server) => {
    if (server.metadata.deletionTimestamp) return false;
    doc.setIn(['metadata', 'deletionTimestamp'], new Date().toISOString());
  });
  if (result === 'invalid' || result === 'missing') commands.requestDeletion(record.name);
  commands.enqueue(record.name);
  await commands.waitFor(record.name, (r) => r === undefined, deps.stopTimeoutMs + 10_000);
}

/** Room for the text fields (10 of at most 64 KiB) and the multipart framing, besides the file. */
const FORM_ROOM_BYTES = 10 * 64 * 1024 + 64 * 1024;

/**
 * multipart/form-data: text fields bounded in size and number, and at most one zip_file, streamed
 * to disk by multer (never held in memory) and refused with 413 while it arrives once past the
 * limit. The upload is removed after the request, whatever happened (a stored one was moved).
 */
function formParser(dir: string, limitMb: () => number): RequestHandler {
  // One parser per limit, made again only when the config's limit changes.
  let made: { maxUploadMb: number; parse: RequestHandler } | undefined;
  return async (req, res, next) => {
    const maxUploadMb = limitMb();
    const maxBytes = Math.floor(maxUploadMb * 1024 * 1024);
    const tooLarge = () => apiError('UPLOAD_TOO_LARGE', { maxMb: maxUploadMb });
    if (made?.maxUploadMb !== maxUploadMb) {
      made = {
        maxUploadMb,
        parse: loadMulter()({ dest: dir, limits: { fields: 10, fieldSize: 64 * 1024, files: 1, parts: 11, fileSize: maxBytes } }).single('zip_file'),
      };
    }
    const { parse } = made;
    if (!req.is('multipart/form-data')) {
      return next(apiError('INVALID_BODY', 'send the form as multipart/form-data (fields name, extensions, and github_url or zip_file)'));
    }
    // A body declared larger than the file limit plus the fields' room is refused before it is
    // read, and the connection closed, so the client learns at once. (multer's own limit below
    // catches a chunked or understated body, but answers only once the rest has been drained.)
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > maxBytes + FORM_ROOM_BYTES) {
      res.setHeader('Connection', 'close');
      return next(tooLarge());
    }
    await fs.mkdir(dir, { recursive: true, mode: 0o700 });
    res.on('close', () => {
      if (req.file) void fs.rm(req.file.path, { force: true });
    });
    parse(req, res, (error?: unknown) => {
      if (!error) return next();
      const code = (error as { code?: string }).code;
      if (code === 'LIMIT_FILE_SIZE') {
        return next(tooLarge());
      }
      if (code === 'LIMIT_UNEXPECTED_FILE' || code === 'LIMIT_FILE_COUNT') {
        return next(apiError('INVALID_BODY', 'send one file, in the field zip_file'));
      }
      next(apiError('INVALID_BODY', `the form could not be read: ${(error as Error).message}`));
    });
  };
}

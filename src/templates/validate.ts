// Reads and checks one template file: bounded read, YAML with the place of every problem, the
// schema (schemas/editorservertemplate.schema.json, compiled once), and what JSON Schema cannot
// say: the settings limits of manifests, the name, the git URL rules, and an archive path that
// must stay inside the templates folder.
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { Ajv, type ErrorObject } from 'ajv';
import { parseYamlLocated, type FileProblem } from '../core/yaml-problems.ts';
import { settingsProblems } from '../manifests/limits.ts';
import { readProjectJson } from '../core/project.ts';
import { gitUrlProblem } from '../workspace/git-source.ts';
import { openInside, readInside, UnsafeFileError } from './read-file.ts';
import type { CatalogTemplate, EditorServerTemplate } from './types.ts';

export const TEMPLATE_EXT = '.yaml';
/** The largest template file read; a larger one is reported, not parsed. */
export const MAX_TEMPLATE_BYTES = 256 * 1024;
const TEMPLATE_RULE = `a template must be a regular ${TEMPLATE_EXT} file directly in the templates folder, at most ${MAX_TEMPLATE_BYTES / 1024} KiB`;

const validate = new Ajv({ allErrors: true, strict: true }).compile<EditorServerTemplate>(readProjectJson('schemas/editorservertemplate.schema.json'));

/** What a pattern of the schema means, for the message (ajv's would print the regular expression). */
const PATTERN_MEANING: Record<string, string> = {
  '#/definitions/extensionId/pattern': 'must be an extension id, publisher.name, optionally @version (such as ms-python.python)',
  '#/definitions/dnsLabel/pattern': 'must be lower-case letters, digits and "-" (a DNS-1123 label)',
  '#/definitions/webUrl/pattern': 'must be an http:// or https:// URL without spaces',
  '#/properties/spec/properties/workspace/properties/source/properties/git/properties/url/pattern': 'must be a git URL: https://, ssh://, git://, file:// or user@host:path',
  '#/properties/spec/properties/workspace/properties/source/properties/git/properties/ref/pattern': 'must be a branch or tag name: letters, digits, ".", "_", "/" and "-", not starting with "-"',
};

export interface TemplateCheckContext {
  /** The templates folder. */
  dir: string;
  /** The git URL schemes workspace sources may use (the config's workspace.gitSchemes, or the defaults). */
  gitSchemes: readonly string[];
  /** The largest archive a template may name (workspace.maxUploadMb, as for uploads). */
  maxArchiveBytes: number;
}

export type TemplateLoad =
  | { kind: 'ok'; template: CatalogTemplate }
  | { kind: 'invalid'; problems: FileProblem[] }
  | { kind: 'missing' };

/** The version of a template: the first 12 hex digits of the sha256 of its file's bytes. */
export function templateVersion(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex').slice(0, 12);
}

/** What an archive of a template must be, for messages. */
export function archiveRule(maxBytes: number): string {
  return `a template's archive must be a regular .zip file inside the templates folder, at most ${Math.round(maxBytes / 1024 / 1024)} MB (workspace.maxUploadMb in the config)`;
}

/** Why a template's archive path may not be used (what to change), or undefined when it may. */
export function archivePathProblem(path: string): string | undefined {
  if (path.startsWith('/')) return `"${path}" is absolute: give the path relative to the templates folder, such as archives/starter.zip`;
  if (/[\\\0]/.test(path)) return `"${path}" holds a backslash or NUL: use "/" between folders`;
  if (path.split('/').includes('..')) return `"${path}" goes up with "..": keep the archive inside the templates folder and give its path from there`;
  if (!path.toLowerCase().endsWith('.zip')) return `"${path}" does not end in .zip: a template's archive is a ZIP file`;
  return undefined;
}

/** Reads the template file `file` of the folder and checks it; 'missing' when it is not there. */
export async function loadTemplateFile(ctx: TemplateCheckContext, file: string): Promise<TemplateLoad> {
  let bytes: Buffer | undefined;
  try {
    bytes = await readInside(ctx.dir, join(ctx.dir, file), MAX_TEMPLATE_BYTES, TEMPLATE_RULE);
  } catch (error) {
    if (!(error instanceof UnsafeFileError)) throw error;
    return { kind: 'invalid', problems: [{ file, problem: `the file ${error.message}` }] };
  }
  if (bytes === undefined) return { kind: 'missing' };
  return checkTemplate(ctx, file, bytes);
}

/** Checks a template file's bytes; `file` is its name in the templates folder. */
async function checkTemplate(ctx: TemplateCheckContext, file: string, bytes: Buffer): Promise<TemplateLoad> {
  const parsed = parseYamlLocated(file, bytes.toString('utf8'));
  if (parsed.problems) return { kind: 'invalid', problems: parsed.problems };
  const value = parsed.value as EditorServerTemplate;
  const errors: ErrorObject[] = validate(value) ? [] : (validate.errors ?? []).map((e) =>
    e.keyword === 'pattern' && PATTERN_MEANING[e.schemaPath] ? { ...e, message: PATTERN_MEANING[e.schemaPath] } : e);

  const id = file.slice(0, -TEMPLATE_EXT.length);
  const name = value?.metadata?.name;
  if (typeof name === 'string' && name !== id) errors.push(ownError('/metadata/name', `"${name}" must equal the file name "${id}" (the template's id): rename the file or the template`));
  const settings = value?.spec?.settings;
  if (settings !== null && typeof settings === 'object') errors.push(...settingsProblems(settings).map((p) => ownError('/spec/settings', p)));
  const url = value?.spec?.workspace?.source?.git?.url;
  if (typeof url === 'string') {
    const problem = gitUrlProblem(url, ctx.gitSchemes);
    if (problem) errors.push(ownError('/spec/workspace/source/git/url', problem));
  }
  const archive = value?.spec?.workspace?.source?.archive?.path;
  if (typeof archive === 'string') {
    const problem = archivePathProblem(archive) ?? await archiveFileProblem(ctx, archive);
    if (problem) errors.push(ownError('/spec/workspace/source/archive/path', problem));
  }
  if (errors.length > 0) return { kind: 'invalid', problems: parsed.locate(errors) };
  return { kind: 'ok', template: { id, file, version: templateVersion(bytes), template: value } };
}

/** Why the archive at `path` (relative, already checked by archivePathProblem) cannot be used now. */
export async function archiveFileProblem(ctx: TemplateCheckContext, path: string): Promise<string | undefined> {
  try {
    const opened = await openInside(ctx.dir, join(ctx.dir, path), ctx.maxArchiveBytes, archiveRule(ctx.maxArchiveBytes));
    if (!opened) return `"${path}" is not in the templates folder: put the ZIP there, or fix the path`;
    await opened.handle.close();
    return undefined;
  } catch (error) {
    if (error instanceof UnsafeFileError) return `"${path}" ${error.message}`;
    throw error;
  }
}

/** A problem of this project's own, in ajv's shape so it is placed at its field like ajv's. */
function ownError(instancePath: string, message: string): ErrorObject {
  return { keyword: 'devbox', instancePath, schemaPath: '', params: {}, message };
}

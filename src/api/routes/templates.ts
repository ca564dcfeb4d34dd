// GET /templates: the templates folder's valid templates by gallery tab, with the problems of the
// invalid files beside them. POST /servers/create-from-template: a new server with a template's
// spec, checked and made the way POST /servers makes one, annotated with the template's id and version.
import { join } from 'node:path';
import type { Router } from 'express';
import { apiError } from '../../core/error-catalogue.ts';
import { formatProblem, type FileProblem } from '../../core/yaml-problems.ts';
import type { WorkspaceSource } from '../../manifests/types.ts';
import { storeTemplateArchive, TemplateArchiveError } from '../../templates/archive.ts';
import type { TemplateCatalog } from '../../templates/catalog.ts';
import { TEMPLATE_ANNOTATION, TEMPLATE_VERSION_ANNOTATION, type CatalogTemplate } from '../../templates/types.ts';
import { gitUrlProblem } from '../../workspace/git-source.ts';
import { checkBody, compileBodySchema } from '../validation.ts';
import type { ServersDeps } from './context.ts';
import { checkCreateBody, createServer, unknownGroupsProblem } from './servers-crud.ts';
import type { HealthSection } from '../../core/health-section.ts';

interface FromTemplateBody {
  name: string;
  template_id: string;
  tab_name?: string;
}

const validateFromTemplate = compileBodySchema<FromTemplateBody>('create-from-template.schema.json');

export function templateRoutes(deps: ServersDeps, catalog: TemplateCatalog, router: Router): void {
  // Read per request: the config file can change while the service runs.
  const gitSchemes = deps.gitSchemes;

  router.get('/templates', (_req, res) => {
    const tabs = new Map<string, ReturnType<typeof itemView>[]>();
    for (const template of catalog.list()) {
      const tab = template.template.gallery.tab;
      tabs.set(tab, [...(tabs.get(tab) ?? []), itemView(template)]);
    }
    const errors = catalog.errors();
    res.json({
      status: 'success',
      data: { tabs: [...tabs].map(([name, items]) => ({ name, items })) },
      ...(errors.length > 0 ? { errors: errors.map(errorView) } : {}),
    });
  });

  router.post('/servers/create-from-template', async (req, res) => {
    const body = checkBody(validateFromTemplate, req.body);
    const found = templateOf(catalog, body);
    const { spec } = found.template;
    const where = join(catalog.dir, found.file);
    const groupsProblem = unknownGroupsProblem(deps, spec.extensionGroups);
    if (groupsProblem !== undefined) {
      throw apiError('UNKNOWN_EXTENSION_GROUP', { template: found.id, problem: groupsProblem, file: where });
    }
    // The same checks as POST /servers, on what the template gives.
    const createBody = checkCreateBody(deps, {
      name: body.name,
      extensions: spec.extensions ?? [],
      ...(spec.extensionGroups ? { extension_groups: spec.extensionGroups } : {}),
      ...(spec.restartPolicy ? { restart_policy: spec.restartPolicy } : {}),
      ...(spec.settings ? { settings: spec.settings } : {}),
    });
    const source = await sourceOf(found, where);
    const created = await createServer(deps, req, createBody, source ? { workspace: { source } } : {}, {
      [TEMPLATE_ANNOTATION]: found.id,
      [TEMPLATE_VERSION_ANNOTATION]: found.version,
    });
    res.status(201).json(created);
  });

  /** The template's workspace source for a manifest: git as it is, an archive copied into the store by its sha256. */
  async function sourceOf(found: CatalogTemplate, where: string): Promise<WorkspaceSource | undefined> {
    const source = found.template.spec.workspace?.source;
    if (source?.git) {
      // Checked again: the allowed schemes are the service's now, not when the file was read.
      const problem = gitUrlProblem(source.git.url, gitSchemes());
      if (problem) throw apiError('TEMPLATE_INVALID', `template "${found.id}" cannot be used: spec.workspace.source.git.url: ${problem} (in ${where})`);
      return { git: { ...source.git } };
    }
    if (source?.archive) {
      try {
        return { archive: { sha256: await storeTemplateArchive(catalog.checkContext, deps.layout, source.archive.path) } };
      } catch (error) {
        if (!(error instanceof TemplateArchiveError)) throw error;
        throw apiError('TEMPLATE_INVALID', `template "${found.id}" cannot be used: its archive ${error.message} (spec.workspace.source.archive.path in ${where})`);
      }
    }
    return undefined;
  }
}

/** The template the body names; 404 listing the known ids, or saying which tab it is in; 409 when its file is invalid. */
function templateOf(catalog: TemplateCatalog, body: FromTemplateBody): CatalogTemplate {
  const id = body.template_id;
  const found = catalog.get(id);
  if (!found) {
    const problems = catalog.problemsOf(id);
    if (problems) {
      throw apiError('TEMPLATE_INVALID', `template "${id}" is invalid and cannot be used until its file is fixed: ${problems.map((p) => formatProblem({ ...p, file: join(catalog.dir, p.file) })).join('; ')}`);
    }
    const known = catalog.list().map((t) => t.id).sort();
    throw apiError('TEMPLATE_NOT_FOUND', known.length > 0
      ? `no template has the id "${id}": the known ids are ${known.join(', ')} (GET /templates lists them)`
      : `no template has the id "${id}": there are no templates (the templates folder ${catalog.dir} holds no valid template file)`);
  }
  const tab = found.template.gallery.tab;
  if (body.tab_name !== undefined && body.tab_name !== tab) {
    throw apiError('TEMPLATE_NOT_FOUND', `template "${id}" is in the tab "${tab}", not "${body.tab_name}": send tab_name "${tab}", or leave tab_name out`);
  }
  return found;
}

/** One gallery item: the interface's fields, snake_case, and what the server would get. */
function itemView(t: CatalogTemplate) {
  const { gallery, spec } = t.template;
  const groups = spec.extensionGroups ?? [];
  const source = spec.workspace?.source;
  return {
    id: t.id,
    name: gallery.name,
    description: gallery.description ?? '',
    tab: gallery.tab,
    extension_groups: groups,
    // The key existing clients of this interface read.
    extensions_groups: groups,
    extensions: spec.extensions ?? [],
    settings: spec.settings ?? {},
    restart_policy: spec.restartPolicy ?? 'Never',
    thumbnail_url: gallery.thumbnailUrl ?? null,
    github_url: gallery.githubUrl ?? null,
    icon_links: (gallery.iconLinks ?? []).map((link) => ({ lucide_icon: link.lucideIcon, url: link.url })),
    version: t.version,
    workspace_source: source?.git
      ? { type: 'git', url: source.git.url, ref: source.git.ref ?? null }
      : source?.archive ? { type: 'archive', path: source.archive.path } : null,
  };
}

function errorView(p: FileProblem) {
  return { file: p.file, line: p.line ?? null, column: p.column ?? null, problem: p.problem };
}

/** The templates section of GET /health: the folder, how many templates it offers, and the invalid files' problems. */
export function templatesHealth(catalog: TemplateCatalog): HealthSection {
  return {
    read: () => ({ folder: catalog.dir, exists: catalog.folderExists, count: catalog.list().length, errors: catalog.errors().map(errorView) }),
    problems: () => catalog.errors().map((p) => `template ${formatProblem({ ...p, file: join(catalog.dir, p.file) })}`),
  };
}

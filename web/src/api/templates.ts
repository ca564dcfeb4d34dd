// GET /templates (the gallery, by tab) and POST /servers/create-from-template.
import { request } from './http.ts';
import type { CreatedServer } from './create.ts';

export interface TemplateItem {
  id: string;
  name: string;
  description: string;
  tab: string;
  extension_groups: string[];
  extensions: string[];
  settings: Record<string, unknown>;
  restart_policy: string;
  thumbnail_url: string | null;
  github_url: string | null;
  icon_links: { lucide_icon: string; url: string }[];
  version: string;
  workspace_source: { type: 'git'; url: string; ref: string | null } | { type: 'archive'; path: string } | null;
}

export interface TemplateTab {
  name: string;
  items: TemplateItem[];
}

/** A template file that could not be read: where, and what is wrong. */
export interface TemplateProblem {
  file: string;
  line: number | null;
  column: number | null;
  problem: string;
}

export interface TemplateGallery {
  tabs: TemplateTab[];
  errors: TemplateProblem[];
}

export async function listTemplates(): Promise<TemplateGallery> {
  const answer = await request<{ data: { tabs: TemplateTab[] }; errors?: TemplateProblem[] }>('GET', 'templates');
  return { tabs: answer.data.tabs, errors: answer.errors ?? [] };
}

/** Creates a server from a template; answers the record POST /servers answers. */
export function createFromTemplate(input: { name: string; templateId: string; tabName?: string }): Promise<CreatedServer> {
  return request<CreatedServer>('POST', 'servers/create-from-template', {
    name: input.name,
    template_id: input.templateId,
    ...(input.tabName ? { tab_name: input.tabName } : {}),
  });
}

// GET /templates (the gallery, by tab) and POST /servers/create-from-template.
import { request } from './http.ts';
import type { CreatedServer, FileProblem, TemplateItem, TemplateTab, TemplatesAnswer } from './types.ts';

export type { TemplateItem };

export interface TemplateGallery {
  tabs: TemplateTab[];
  errors: FileProblem[];
}

export async function listTemplates(): Promise<TemplateGallery> {
  const answer = await request<TemplatesAnswer>('GET', 'templates');
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

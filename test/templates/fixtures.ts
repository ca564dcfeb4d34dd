// Template files written by the tests: valid ones from a few fields, and broken ones by hand.
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';

export const MODELINE = '# yaml-language-server: $schema=../schemas/editorservertemplate.schema.json';

export interface TemplateFields {
  name?: string;
  tab?: string;
  description?: string;
  gallery?: Record<string, unknown>;
  spec?: Record<string, unknown>;
}

/** The text of a valid template file with this id. */
export function templateText(id: string, fields: TemplateFields = {}): string {
  return `${MODELINE}\n${stringify({
    apiVersion: 'devbox.dev/v1alpha1',
    kind: 'EditorServerTemplate',
    metadata: { name: id },
    gallery: { name: fields.name ?? `Template ${id}`, description: fields.description ?? `the ${id} template`, tab: fields.tab ?? 'General', ...fields.gallery },
    spec: fields.spec ?? {},
  })}`;
}

/** Writes <dir>/<id>.yaml whole (a temporary file renamed into place, as an editor or git does). */
export async function writeTemplate(dir: string, id: string, fields: TemplateFields = {}): Promise<string> {
  return writeWhole(join(dir, `${id}.yaml`), templateText(id, fields));
}

export async function writeWhole(path: string, text: string | Buffer): Promise<string> {
  const tmp = join(path, '..', `.${Math.random().toString(16).slice(2)}.tmp`);
  await fs.writeFile(tmp, text);
  await fs.rename(tmp, path);
  return path;
}

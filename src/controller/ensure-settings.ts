// Step: spec.settings as the editor's User/settings.json.
import { promises as fs } from 'node:fs';
import { writeFileAtomic } from '../core/atomic-write.ts';
import type { Live } from './cache.ts';
import type { ReconcilerDeps } from './context.ts';

export async function ensureSettings(deps: ReconcilerDeps, name: string, live: Live, settings: Record<string, unknown> | undefined): Promise<void> {
  if (!settings) return;
  const text = JSON.stringify(settings, null, 2) + '\n';
  // Written when the spec's settings change, not read back on every reconcile; the file is
  // read once per name (after a restart) so an adopted editor sees no needless rewrite.
  if (live.settingsText === text) return;
  const dir = `${deps.layout.editor(name).userDataDir}/User`;
  const file = `${dir}/settings.json`;
  if (live.settingsText === undefined && (await fs.readFile(file, 'utf8').catch(() => undefined)) === text) {
    live.settingsText = text;
    return;
  }
  await fs.mkdir(dir, { recursive: true });
  await writeFileAtomic(file, text);
  live.settingsText = text;
}

// Step: the groups' user_settings and spec.settings, merged into the editor's User/settings.json
// without overwriting what the user changed inside the editor (see extensions/user-settings.ts).
// What the controller last wrote is kept in editors/<name>/settings-applied.json, so this
// holds across restarts of the service and of the editor.
import { promises as fs } from 'node:fs';
import { sameData } from '../core/equal.ts';
import { writeFileAtomic } from '../core/atomic-write.ts';
import { desiredSettings, mergeSettings, parseJsonc } from '../extensions/user-settings.ts';
import type { EditorServerSpec } from '../manifests/types.ts';
import type { Live } from './cache.ts';
import type { ReconcilerDeps } from './context.ts';

export async function ensureSettings(deps: ReconcilerDeps, name: string, live: Live, spec: EditorServerSpec): Promise<void> {
  const desired = desiredSettings(deps.config.extensionGroups, spec.extensionGroups, spec.settings);
  const key = JSON.stringify(desired);
  // Acted on when the desired settings change (and once per name after a restart), not on
  // every reconcile: between changes the file is the user's.
  if (live.settingsText === key) return;
  const editor = deps.layout.editor(name);
  const dir = `${editor.userDataDir}/User`;
  const file = `${dir}/settings.json`;
  const sidecar = `${editor.root}/settings-applied.json`;
  const lastWritten = parseJsonc(await fs.readFile(sidecar, 'utf8').catch(() => '')) ?? {};
  const text = await fs.readFile(file, 'utf8').catch(() => undefined);
  const current = text === undefined ? {} : parseJsonc(text);
  if (current === undefined) {
    // Never replace a file the user is in the middle of breaking: say so once per change.
    deps.logs.event(name, 'WARN', `${file} is not valid JSON (with comments): the settings from the spec and its groups are applied once it is fixed`);
    live.settingsText = key;
    return;
  }
  const next = mergeSettings(current, desired, lastWritten);
  if (!sameData(next, current)) {
    await fs.mkdir(dir, { recursive: true });
    await writeFileAtomic(file, JSON.stringify(next, null, 2) + '\n');
  }
  if (!sameData(lastWritten, desired)) {
    await fs.mkdir(editor.root, { recursive: true });
    await writeFileAtomic(sidecar, JSON.stringify(desired, null, 2) + '\n');
  }
  live.settingsText = key;
}

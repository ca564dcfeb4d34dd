// Step: the groups' user_settings, devcontainer.json's settings and spec.settings, merged into the editor's User/settings.json
// without overwriting what the user changed inside the editor (see extensions/user-settings.ts).
// What the controller last wrote is kept beside the editor's data (the runtime's storage), so this
// holds across restarts of the service and of the editor.
import { sameData } from '../core/equal.ts';
import { desiredSettings, mergeSettings, parseJsonc } from '../extensions/user-settings.ts';
import type { EditorServerSpec } from '../manifests/types.ts';
import type { ReconcileContext } from './context.ts';
import { activePlan } from './ensure-devcontainer.ts';
import { PerServer } from './per-server.ts';

/** The desired settings (groups' user_settings and spec.settings, as JSON) last applied to settings.json, by server. */
export class SettingsApplied extends PerServer<{ text?: string }> {
  constructor() {
    super(() => ({}));
  }
}

/**
 * Applies the settings the spec and its groups ask for. `whenAsked`: only if they ask for any; so
 * a server that asks for none (most of them) costs no read until its editor starts or runs, where
 * what an earlier spec applied is taken out.
 */
export async function ensureSettings(
  ctx: Pick<ReconcileContext, 'deps' | 'settings' | 'devcontainer' | 'table'>, name: string, spec: EditorServerSpec, whenAsked = false,
): Promise<void> {
  const { deps } = ctx;
  const applied = ctx.settings.of(name);
  // devcontainer.json's settings under the manifest's: where both speak, the manifest wins.
  const fromFile = activePlan(ctx, name)?.settings;
  const desired = desiredSettings(deps.config.extensionGroups, spec.extensionGroups, fromFile ? { ...fromFile, ...spec.settings } : spec.settings);
  const key = JSON.stringify(desired);
  // Acted on when the desired settings change (and once per name after a restart), not on
  // every reconcile: between changes the file is the user's.
  if (applied.text === key) return;
  if (whenAsked && Object.keys(desired).length === 0) return;
  const { storage } = deps;
  // Storage reached only through a running editor (a cluster): written once it runs.
  if (storage.storageDeferred?.(name)) return;
  const lastWritten = parseJsonc((await storage.readAppliedSettings(name)) ?? '') ?? {};
  // Nothing to apply and nothing applied before (most servers): the file is the user's alone, not even read.
  if (Object.keys(desired).length === 0 && Object.keys(lastWritten).length === 0) {
    applied.text = key;
    return;
  }
  const text = await storage.readSettings(name);
  const current = text === undefined ? {} : parseJsonc(text);
  if (current === undefined) {
    // Never replace a file the user is in the middle of breaking: say so once per change.
    deps.logs.event(name, 'WARN', `the editor's User/settings.json is not valid JSON (with comments): the settings from the spec and its groups are applied once it is fixed`);
    applied.text = key;
    return;
  }
  const next = mergeSettings(current, desired, lastWritten);
  if (!sameData(next, current)) await storage.writeSettings(name, JSON.stringify(next, null, 2) + '\n');
  if (!sameData(lastWritten, desired)) await storage.writeAppliedSettings(name, JSON.stringify(desired, null, 2) + '\n');
  applied.text = key;
}

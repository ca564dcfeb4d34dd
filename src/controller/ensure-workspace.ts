// Step: the server's workspace and editor folders, made once per name (and checked again
// before every launch, by the process step).
import { ensureWorkspace } from '../workspace/layout.ts';
import type { Live } from './cache.ts';
import type { ReconcilerDeps } from './context.ts';

/** Makes the folders if this name has not had them made yet; returns the workspace path. */
export async function ensureWorkspaceOnce(deps: ReconcilerDeps, name: string, live: Live): Promise<string> {
  if (!live.workspaceMade) {
    await ensureWorkspace(deps.layout, name);
    live.workspaceMade = true;
  }
  return deps.layout.workspace(name);
}

// The editor's environment from devcontainer.json: containerEnv, then remoteEnv over it, with the
// reference's substitutions. `${localEnv:…}` reads the environment an editor is given anyway (the
// service's own without its secrets, core/child-env.ts), never the service's secrets: a repository
// cannot copy a token into its editor by naming it.
import { basename } from 'node:path';
import type { DevcontainerPlan } from './types.ts';

export interface EnvContext {
  /** What `${localEnv:VAR}` reads: the environment an editor gets (secrets already taken out). */
  localEnv: Readonly<Record<string, string | undefined>>;
  /** The workspace as the editor sees it (a folder on this machine, or the path in the editor's container). */
  containerWorkspaceFolder: string;
  /** What `${containerEnv:VAR}` reads besides containerEnv itself: the editor's own environment where it is known (one machine), else nothing. */
  containerEnv?: Readonly<Record<string, string | undefined>>;
  /** `${devcontainerId}`: the server's uid. */
  id?: string;
}

const VARIABLE = /\$\{([A-Za-z]+)(?::([^}:]*))?(?::([^}]*))?\}/g;

/** The variables the editor's environment gains (or, for remoteEnv's null, loses among containerEnv's). */
export function devcontainerEnv(plan: Pick<DevcontainerPlan, 'containerEnv' | 'remoteEnv'>, context: EnvContext): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(plan.containerEnv)) env[name] = substitute(value, context, {});
  for (const [name, value] of Object.entries(plan.remoteEnv)) {
    if (value === null) delete env[name];
    else env[name] = substitute(value, context, env);
  }
  return env;
}

/** `text` with the reference's variables replaced; an unknown variable is left as written. */
export function substitute(text: string, context: EnvContext, containerEnv: Record<string, string>): string {
  return text.replace(VARIABLE, (whole, kind: string, name: string | undefined, fallback: string | undefined) => {
    switch (kind) {
      case 'localEnv':
      case 'env':
        return name ? (context.localEnv[name] ?? fallback ?? '') : whole;
      case 'containerEnv':
        return name ? (containerEnv[name] ?? context.containerEnv?.[name] ?? fallback ?? '') : whole;
      case 'containerWorkspaceFolder':
      case 'localWorkspaceFolder':
        return context.containerWorkspaceFolder;
      case 'containerWorkspaceFolderBasename':
      case 'localWorkspaceFolderBasename':
        return basename(context.containerWorkspaceFolder);
      case 'devcontainerId':
        return context.id ?? whole;
      default:
        return whole;
    }
  });
}

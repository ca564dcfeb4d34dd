// Finds the code-server to launch: DEVBOX_EDITOR_BIN, else the copy `npm install` put in the
// cache, else `code-server` on PATH.
import { accessSync, constants, existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { PACKAGE_JSON } from '../core/project.ts';

export interface EditorBinary {
  path: string;
  source: 'DEVBOX_EDITOR_BIN' | 'installed' | 'PATH';
}

const pins = PACKAGE_JSON.devbox;

export function cacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.DEVBOX_CACHE_DIR || join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'devbox-controller');
}

/** Where scripts/install-editor.mjs puts the pinned code-server's launcher. */
export function installedEditorPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(cacheDir(env), `code-server-${pins.codeServer}`, 'bin', 'code-server');
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export class EditorNotFoundError extends Error {}

/** The editor to launch, always as an absolute path: editors are launched from their workspace folder. */
export function resolveEditorBinary(env: NodeJS.ProcessEnv = process.env): EditorBinary {
  if (env.DEVBOX_EDITOR_BIN) {
    if (!executable(env.DEVBOX_EDITOR_BIN)) {
      throw new EditorNotFoundError(`DEVBOX_EDITOR_BIN=${env.DEVBOX_EDITOR_BIN} is not an executable file`);
    }
    return { path: resolve(env.DEVBOX_EDITOR_BIN), source: 'DEVBOX_EDITOR_BIN' };
  }
  const installed = installedEditorPath(env);
  if (existsSync(installed) && executable(installed)) return { path: resolve(installed), source: 'installed' };
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    const candidate = join(dir, 'code-server');
    if (dir && executable(candidate)) return { path: resolve(candidate), source: 'PATH' };
  }
  throw new EditorNotFoundError(
    `no code-server found: run npm install (it installs code-server ${pins.codeServer} into ${installed}), ` +
      'put code-server on PATH, or set DEVBOX_EDITOR_BIN',
  );
}

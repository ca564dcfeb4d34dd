// ~/.databrickscfg: the [DEFAULT] profile holds the service principal (host, client_id,
// client_secret), so the databricks CLI works in editor terminals. Other profiles, and the
// comments around them, are a person's and are kept as they are.
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { workspaceUrl } from '../config/workspace-url.ts';
import { writeSecretFile } from './secret-file.ts';

export interface ServicePrincipal {
  host: string;
  clientId: string;
  clientSecret: string;
}

export function databricksCfgFile(homeDir: string): string {
  return join(homeDir, '.databrickscfg');
}

/** The file's text with [DEFAULT] replaced by the service principal (first), everything else kept. */
export function withDefaultProfile(existing: string | undefined, principal: ServicePrincipal): string {
  for (const [key, value] of Object.entries(principal)) {
    if (/[\r\n]/.test(value)) throw new Error(`the service principal's ${key} holds a line break, which ~/.databrickscfg cannot store`);
  }
  const kept: string[] = [];
  let inDefault = false;
  let seenSection = false;
  for (const line of (existing ?? '').split(/\r?\n/)) {
    const section = /^\s*\[([^\]]*)\]\s*$/.exec(line);
    if (section) {
      seenSection = true;
      inDefault = section[1].trim() === 'DEFAULT';
      if (!inDefault) kept.push(line);
      continue;
    }
    // Settings above the first section header are [DEFAULT]'s; comments and blank lines stay.
    if (inDefault || (!seenSection && /^\s*[^\s#;]/.test(line))) continue;
    kept.push(line);
  }
  const others = kept.join('\n').replace(/^(\s*\n)+/, '').trimEnd();
  const profile = `[DEFAULT]\nhost          = ${workspaceUrl(principal.host)}\nclient_id     = ${principal.clientId}\nclient_secret = ${principal.clientSecret}\n`;
  return others === '' ? profile : `${profile}\n${others}\n`;
}

/** Rewrites [DEFAULT] of ~/.databrickscfg atomically, mode 0600. */
export async function writeDatabricksCfg(file: string, principal: ServicePrincipal): Promise<void> {
  let existing: string | undefined;
  try {
    existing = await fs.readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  await writeSecretFile(file, withDefaultProfile(existing, principal));
}

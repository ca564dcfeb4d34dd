// What is really installed in an extensions folder, and the local .vsix files that can stand in
// for the marketplace (DEVBOX_VSIX_DIR).
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { byVersion } from '../core/compare.ts';

/** publisher.name of an id that may carry @version, lower case (VS Code ids are case-insensitive). */
export function extensionName(id: string): string {
  return id.replace(/@[^@]*$/, '').toLowerCase();
}

/** The version an id pins (publisher.name@1.2.3), if any. */
export function pinnedVersion(id: string): string | undefined {
  return /@([^@]+)$/.exec(id)?.[1];
}

/**
 * code-server's own list, extensions.json (what --list-extensions reads: an uninstalled
 * extension's folder stays until the editor cleans it up, but leaves this list); without it,
 * the folders named publisher.name-version that hold a package.json.
 */
export async function installedExtensions(dir: string): Promise<Map<string, string | undefined>> {
  const listed = parseExtensionsList(await fs.readFile(join(dir, 'extensions.json'), 'utf8').catch(() => undefined));
  if (listed) return listed;
  const found = new Map<string, string | undefined>();
  for (const entry of await fs.readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const folder = entry.isDirectory() ? extensionFolder(entry.name) : undefined;
    if (folder && (await fs.access(join(dir, entry.name, 'package.json')).then(() => true, () => false))) found.set(folder.id, folder.version);
  }
  return found;
}

/** code-server's extensions.json as lower-case publisher.name → version; undefined when missing or broken (read the folders instead). */
export function parseExtensionsList(text: string | undefined): Map<string, string | undefined> | undefined {
  if (text === undefined) return undefined;
  try {
    const found = new Map<string, string | undefined>();
    for (const entry of JSON.parse(text) as Array<{ identifier?: { id?: string }; version?: string }>) {
      if (typeof entry?.identifier?.id === 'string') found.set(entry.identifier.id.toLowerCase(), entry.version);
    }
    return found;
  } catch {
    // A list being rewritten or broken.
    return undefined;
  }
}

/** The extension an install folder (publisher.name-1.2.3) holds. */
export function extensionFolder(folder: string): { id: string; version: string } | undefined {
  const match = /^([a-z0-9][a-z0-9-]*\.[a-z0-9][a-z0-9._-]*?)-(\d+\.\d+\.\d+[^/]*)$/i.exec(folder);
  return match ? { id: match[1].toLowerCase(), version: match[2] } : undefined;
}

/**
 * A .vsix for the id in the folder: publisher.name-version.vsix (the version pinned, else the
 * highest there) or publisher.name.vsix; case-insensitive.
 */
export async function findVsix(dir: string, id: string): Promise<string | undefined> {
  const name = extensionName(id);
  const pinned = pinnedVersion(id);
  const candidates: Array<{ file: string; version: string }> = [];
  for (const file of await fs.readdir(dir).catch(() => [] as string[])) {
    const lower = file.toLowerCase();
    if (lower === `${name}.vsix` && !pinned) candidates.push({ file, version: '' });
    else if (lower.startsWith(`${name}-`) && lower.endsWith('.vsix')) {
      const version = file.slice(name.length + 1, -'.vsix'.length);
      if (/^\d/.test(version) && (!pinned || version === pinned)) candidates.push({ file, version });
    }
  }
  candidates.sort((a, b) => byVersion(b.version, a.version));
  return candidates[0] ? join(dir, candidates[0].file) : undefined;
}

/** A spec entry that is a .vsix file rather than a marketplace id. */
export function isVsixPath(entry: string): boolean {
  return entry.startsWith('/') && entry.toLowerCase().endsWith('.vsix');
}

const vsixIds = new Map<string, { stamp: string; id?: { name: string; version?: string } }>();

/**
 * The publisher.name (lower case) and version inside a .vsix file, from its
 * extension/package.json; undefined when the file is missing or not a .vsix. Cached per file
 * while its size and time stay the same.
 */
export async function vsixIdentity(file: string): Promise<{ name: string; version?: string } | undefined> {
  const stat = await fs.stat(file).catch(() => undefined);
  if (!stat?.isFile()) return undefined;
  const stamp = `${stat.size}:${stat.mtimeMs}`;
  const cached = vsixIds.get(file);
  if (cached?.stamp === stamp) return cached.id;
  let id: { name: string; version?: string } | undefined;
  try {
    const { default: AdmZip } = await import('adm-zip');
    const text = new AdmZip(file).readAsText('extension/package.json');
    const pkg = JSON.parse(text) as { publisher?: string; name?: string; version?: string };
    if (pkg.publisher && pkg.name) id = { name: `${pkg.publisher}.${pkg.name}`.toLowerCase(), version: pkg.version };
  } catch {
    id = undefined;
  }
  vsixIds.set(file, { stamp, id });
  return id;
}

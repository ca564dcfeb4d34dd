// Reads one entry of the manifests folder as untrusted input (src/core/untrusted-file.ts): never
// through a link, never blocking on a FIFO or device, never more than the size limit, and never
// a half-written file.
import { lstat } from 'node:fs/promises';
import { readUntrusted, readUntrustedWithStats, versionOf, type FileRule } from '../core/untrusted-file.ts';

export { kindOf } from '../core/untrusted-file.ts';

/** The largest manifest read; a larger file is reported, not parsed (its YAML would cost far more heap). */
export const MAX_MANIFEST_BYTES = 256 * 1024;

/** An entry that cannot be a manifest; the message completes "<file> …" and says what to change. */
export class UnreadableEntryError extends Error {}

const RULE: FileRule = {
  rule: 'a manifest must be a regular file directly in the manifests folder, at most 256 KiB',
  sizeRule: `a manifest may be at most ${MAX_MANIFEST_BYTES / 1024} KiB; keep large settings out of it`,
  error: (message) => new UnreadableEntryError(message),
};

/** The entry's text, or undefined when there is none. A file that changes while being read is read again, a few times. */
export async function readManifestEntry(path: string): Promise<string | undefined> {
  return (await readUntrusted(path, MAX_MANIFEST_BYTES, RULE))?.toString('utf8');
}

/** The entry's text and its version (see versionOf), or undefined when there is none. */
export async function readManifestVersion(path: string): Promise<{ text: string; version: string } | undefined> {
  const read = await readUntrustedWithStats(path, MAX_MANIFEST_BYTES, RULE);
  return read && { text: read.bytes.toString('utf8'), version: versionOf(read.stats) };
}

/** The version of the regular file at `path` (see versionOf), without reading it; undefined for anything else. */
export async function manifestVersion(path: string): Promise<string | undefined> {
  const stats = await lstat(path, { bigint: true }).catch(() => undefined);
  return stats?.isFile() ? versionOf(stats) : undefined;
}

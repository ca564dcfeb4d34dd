// ZIP workspace sources: every entry is checked before one byte is written, then extracted into
// a folder beside the workspace and moved in. An archive is untrusted input: entries that would
// land outside the workspace (`..`, absolute paths, symlinks, device files) are refused, and so
// is a ZIP bomb (too many entries, too many bytes, or a compression ratio no real project has).
import { closeSync, constants, mkdirSync, openSync, promises as fs, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { basename, dirname, join, relative, isAbsolute } from 'node:path';
import type AdmZip from 'adm-zip';
import { requiredOnFirstUse } from '../core/first-use.ts';

// adm-zip is required on the first archive read, not at start (about 1 MB of heap the service
// needs only for uploads and templates with an archive); require keeps planArchive synchronous.
const loadAdmZip = requiredOnFirstUse<typeof AdmZip>('adm-zip');

export const ZIP_LIMITS = {
  maxEntries: 20_000,
  maxTotalBytes: 1024 ** 3,
  /** Uncompressed ÷ compressed size of an entry over 1 MiB; source code compresses 3–10 times. */
  maxRatio: 100,
};
const RATIO_FLOOR_BYTES = 1024 * 1024;

/** A problem with the archive itself: retrying cannot fix it (a terminal error). */
export class ArchiveError extends Error {}

const S_IFMT = 0o170000;
const TYPES: Record<number, string> = { 0o120000: 'a symbolic link', 0o020000: 'a character device', 0o060000: 'a block device', 0o010000: 'a FIFO', 0o140000: 'a socket' };

interface Planned { parts: string[]; dir: boolean; executable: boolean; size: number; entry: AdmZip.IZipEntry }

/** Checks every entry; returns where each goes (a single top-level folder flattened). Throws ArchiveError. */
export function planArchive(zipPath: string, limits = ZIP_LIMITS): Planned[] {
  let zip: AdmZip;
  try {
    zip = new (loadAdmZip())(zipPath);
  } catch (error) {
    throw new ArchiveError(`the upload is not a readable ZIP file (${(error as Error).message}): send a .zip archive`);
  }
  const entries = zip.getEntries();
  if (entries.length > limits.maxEntries) {
    throw new ArchiveError(`the ZIP holds ${entries.length} entries, more than ${limits.maxEntries}: send a smaller archive`);
  }
  let total = 0;
  const planned = entries.map((entry): Planned => {
    const name = entry.entryName;
    if (/[\0\\]/.test(name)) throw new ArchiveError(`the ZIP entry "${name}" holds a backslash or NUL: only "/" separates folders`);
    if (name.startsWith('/') || /^[A-Za-z]:/.test(name)) throw new ArchiveError(`the ZIP entry "${name}" is an absolute path: entries must be relative`);
    const parts = name.split('/').filter((p) => p !== '' && p !== '.');
    if (parts.includes('..')) throw new ArchiveError(`the ZIP entry "${name}" climbs out with "..": entries must stay inside the archive`);
    const unixMode = (entry.header.attr >>> 16) & 0xffff;
    const type = unixMode & S_IFMT;
    if (TYPES[type]) throw new ArchiveError(`the ZIP entry "${name}" is ${TYPES[type]}: only files and folders are extracted`);
    const size = entry.header.size;
    const packed = entry.header.compressedSize;
    total += size;
    if (total > limits.maxTotalBytes) throw new ArchiveError(`the ZIP unpacks to more than ${limits.maxTotalBytes / 1024 ** 2} MiB (a ZIP bomb?): send a smaller archive`);
    if (!entry.isDirectory && size > RATIO_FLOOR_BYTES && size / Math.max(packed, 1) > limits.maxRatio) {
      throw new ArchiveError(`the ZIP entry "${name}" unpacks ${Math.round(size / Math.max(packed, 1))} times larger than it is packed, over ${limits.maxRatio} (a ZIP bomb?): send a normal archive`);
    }
    return { parts, dir: entry.isDirectory, executable: (unixMode & 0o111) !== 0, size, entry };
  }).filter((p) => p.parts.length > 0);
  // Everything under one folder: its contents become the workspace root.
  const tops = new Set(planned.map((p) => p.parts[0]));
  if (tops.size === 1 && planned.every((p) => p.parts.length > 1 || p.dir)) {
    for (const p of planned) p.parts = p.parts.slice(1);
    return planned.filter((p) => p.parts.length > 0);
  }
  return planned;
}

/** Extracts into the empty workspace: files 0600 (0700 if executable), folders 0700. Throws ArchiveError. */
export async function extractInto(workspace: string, zipPath: string, signal: AbortSignal, limits = ZIP_LIMITS): Promise<number> {
  const planned = planArchive(zipPath, limits);
  const temp = join(dirname(workspace), `.${basename(workspace)}.extract-${randomBytes(4).toString('hex')}`);
  await fs.mkdir(temp, { mode: 0o700 });
  let written = 0;
  // Each folder is made once, not once per file in it. Files are written synchronously in slices
  // of at most 20 ms, yielding to the event loop between slices: three thread-pool round trips
  // per file (open, write, close) made extraction 4-5 times slower than unzip.
  const made = new Set<string>([temp]);
  const makeDir = (dir: string) => {
    if (made.has(dir)) return;
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    made.add(dir);
  };
  let sliceStart = performance.now();
  try {
    for (const p of planned) {
      if (performance.now() - sliceStart > 20) {
        await new Promise((resolve) => setImmediate(resolve));
        sliceStart = performance.now();
      }
      signal.throwIfAborted();
      const dest = join(temp, ...p.parts);
      const inside = relative(temp, dest);
      if (inside.startsWith('..') || isAbsolute(inside)) throw new ArchiveError(`the ZIP entry "${p.entry.entryName}" would land outside the workspace`);
      if (p.dir) {
        makeDir(dest);
        continue;
      }
      makeDir(dirname(dest));
      const data = p.entry.getData();
      // The header's size may lie: the bytes really unpacked count.
      written += data.length;
      if (data.length !== p.size || written > limits.maxTotalBytes) {
        throw new ArchiveError(`the ZIP entry "${p.entry.entryName}" unpacks to ${data.length} bytes, not the ${p.size} its header says: send an undamaged archive`);
      }
      // O_EXCL and O_NOFOLLOW: never through a link, never over an entry written before.
      try {
        const fd = openSync(dest, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, p.executable ? 0o700 : 0o600);
        try {
          for (let at = 0; at < data.length;) at += writeSync(fd, data, at);
        } finally {
          closeSync(fd);
        }
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw new ArchiveError(`the ZIP holds "${p.entry.entryName}" twice: send an archive with each path once`);
        throw error;
      }
    }
    if ((await fs.readdir(workspace)).length > 0) throw new Error(`the workspace ${workspace} is not empty: nothing was extracted into it`);
    for (const entry of await fs.readdir(temp)) await fs.rename(join(temp, entry), join(workspace, entry));
    await fs.chmod(workspace, 0o700);
    return planned.length;
  } finally {
    await fs.rm(temp, { recursive: true, force: true });
  }
}

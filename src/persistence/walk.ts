// Lists what a snapshot keeps of one root: every folder, file and symlink not excluded, found
// with lstat so no symlink is ever followed. Names are exact: a folder is listed as text, and
// again as raw bytes when a name in it is not UTF-8 (the text listing shows it with U+FFFD), so
// newlines and bytes that are not UTF-8 stay exact while the common case costs no Buffer per
// name. FIFOs, sockets and devices are left out and reported.
import { lstatSync, readdirSync, readlinkSync, statSync, type Dirent } from 'node:fs';
import type { ExcludeMatcher } from './excludes.ts';
import type { JournalBase, RootJournal } from './journal.ts';
import { displayPath } from './index-file.ts';
import { Slicer } from './slices.ts';
import type { SkippedEntry, SnapshotRoot } from './types.ts';
import { RESTORE_TEMP_PREFIX } from './write-file.ts';

/** A path as text when its bytes are UTF-8, else its raw bytes. */
export type RawPath = string | Buffer;

interface WalkedBase {
  /** The path below the root, `/`-separated. */
  rel: RawPath;
  /** The absolute path. */
  abs: RawPath;
  mtimeMs: number;
}
export interface WalkedFile extends WalkedBase { kind: 'file'; mode: number; size: number; ino: number }
export interface WalkedDir extends WalkedBase { kind: 'dir'; mode: number }
export interface WalkedLink extends WalkedBase { kind: 'link'; target: Buffer }
export type Walked = WalkedFile | WalkedDir | WalkedLink;

export interface WalkedRoot {
  root: SnapshotRoot;
  absent: boolean;
  /** Parents before children, each folder's entries in byte order of their names. */
  entries: Walked[];
}

const SLASH = Buffer.from('/');
const TEMP_MARK = Buffer.from(RESTORE_TEMP_PREFIX);
const REPLACEMENT = '\uFFFD';
const errno = (error: unknown) => (error as NodeJS.ErrnoException).code;

/** Byte order of UTF-8 names is code point order; JavaScript's `<` is UTF-16 order, which differs above U+FFFF. */
const byCodePoint = (a: string, b: string) => (a === b ? 0 : Buffer.compare(Buffer.from(a), Buffer.from(b)));
const isAscii = (text: string) => /^[\x00-\x7f]*$/.test(text);

export async function walkRoot(
  root: SnapshotRoot, matcher: ExcludeMatcher, skipped: SkippedEntry[], signal?: AbortSignal, journal?: RootJournal,
): Promise<WalkedRoot> {
  const rootStat = statSync(root.dir, { throwIfNoEntry: false });
  if (!rootStat) {
    journal?.reset();
    return { root, absent: true, entries: [] };
  }
  if (!rootStat.isDirectory()) throw new Error(`${root.dir} (the ${root.id} folder) is not a folder`);
  const walker = new Walker(root, matcher, skipped, signal, journal);
  const base = await journal?.take(rootStat.ino);
  try {
    if (base) {
      await patchWalk(walker, base);
    } else {
      journal?.beginFull(rootStat.ino);
      await walker.walkDir(root.dir, undefined);
    }
  } catch (error) {
    journal?.reset();
    throw error;
  }
  journal?.rebase(walker.entries, walker.reports);
  return { root, absent: false, entries: walker.entries };
}

/** Walks folders into `entries`, in order; a folder is watched by the journal before it is listed. */
export class Walker {
  readonly root: SnapshotRoot;
  readonly journal: RootJournal | undefined;
  readonly entries: Walked[] = [];
  /** What this walk reported (also pushed to the snapshot's `skipped`). */
  readonly reports: SkippedEntry[] = [];
  private readonly matcher: ExcludeMatcher;
  private readonly skipped: SkippedEntry[];
  private readonly signal: AbortSignal | undefined;
  private readonly only: Set<string> | undefined;
  readonly slicer = new Slicer();

  constructor(root: SnapshotRoot, matcher: ExcludeMatcher, skipped: SkippedEntry[], signal: AbortSignal | undefined, journal: RootJournal | undefined) {
    this.root = root;
    this.matcher = matcher;
    this.skipped = skipped;
    this.signal = signal;
    this.journal = journal;
    this.only = root.only && new Set(root.only);
  }

  report(rel: RawPath, reason: string): void {
    this.keepReport({ root: this.root.id, path: typeof rel === 'string' ? rel : displayPath(rel), reason });
  }

  keepReport(entry: SkippedEntry): void {
    this.reports.push(entry);
    this.skipped.push(entry);
  }

  /** Walks a folder (its entry pushed already by the caller) and everything below it. */
  async walkDir(abs: RawPath, rel: RawPath | undefined): Promise<void> {
    this.signal?.throwIfAborted();
    while (this.slicer.due()) await this.slicer.pass();
    if (typeof abs === 'string' && typeof rel !== 'object') this.journal?.watchFolder(rel ?? '', abs);
    const dirents = this.list(abs, rel);
    if (!dirents) return;
    for (const dirent of dirents) {
      const name = dirent.name;
      let entryRel: RawPath;
      let entryAbs: RawPath;
      let relText: string;
      if (typeof name === 'string' && typeof abs === 'string' && typeof rel !== 'object') {
        if (name.startsWith(RESTORE_TEMP_PREFIX)) continue; // a restore's file cut short by a crash
        entryRel = rel === undefined ? name : `${rel}/${name}`;
        entryAbs = `${abs}/${name}`;
        relText = entryRel;
      } else {
        const bytes = typeof name === 'string' ? Buffer.from(name) : name;
        if (bytes.subarray(0, TEMP_MARK.length).equals(TEMP_MARK)) continue;
        const relBytes = rel === undefined ? bytes : Buffer.concat([typeof rel === 'string' ? Buffer.from(rel) : rel, SLASH, bytes]);
        entryRel = relBytes;
        entryAbs = Buffer.concat([typeof abs === 'string' ? Buffer.from(abs) : abs, SLASH, bytes]);
        relText = relBytes.toString('utf8');
      }
      if (this.only && rel === undefined && !this.only.has(relText)) continue;
      // Decide from the folder listing's types when it has them: an excluded folder costs no lstat.
      const typed = dirent.isFile() || dirent.isDirectory() || dirent.isSymbolicLink() || dirent.isFIFO() || dirent.isSocket() || dirent.isBlockDevice() || dirent.isCharacterDevice();
      if (typed && this.matcher.excludes(relText, dirent.isDirectory())) continue;
      const entry = this.entryAt(entryAbs, entryRel, relText, !typed);
      if (entry?.kind === 'dir') await this.walkDir(entryAbs, entryRel);
      while (this.slicer.due()) await this.slicer.pass();
    }
  }

  /**
   * Pushes the entry at a path (lstat, never followed) unless it is gone or excluded, and
   * answers it; FIFOs, sockets and devices are reported instead. `match`: apply the exclude
   * patterns here (the caller did not, from a folder listing's type).
   */
  entryAt(abs: RawPath, rel: RawPath, relText: string, match: boolean): Walked | undefined {
    const stat = lstatSync(abs, { throwIfNoEntry: false });
    if (!stat) return undefined; // gone since the listing
    if (match && this.matcher.excludes(relText, stat.isDirectory())) return undefined;
    let entry: Walked;
    if (stat.isFile()) {
      entry = { kind: 'file', rel, abs, mtimeMs: stat.mtimeMs, mode: stat.mode & 0o7777, size: stat.size, ino: stat.ino };
    } else if (stat.isDirectory()) {
      entry = { kind: 'dir', rel, abs, mtimeMs: stat.mtimeMs, mode: stat.mode & 0o7777 };
    } else if (stat.isSymbolicLink()) {
      try {
        entry = { kind: 'link', rel, abs, mtimeMs: stat.mtimeMs, target: readlinkSync(abs, { encoding: 'buffer' }) };
      } catch (error) {
        if (errno(error) !== 'ENOENT' && errno(error) !== 'EINVAL') throw error;
        return undefined;
      }
    } else {
      this.report(rel, stat.isFIFO() ? 'fifo' : stat.isSocket() ? 'socket' : 'device');
      return undefined;
    }
    this.entries.push(entry);
    return entry;
  }

  /** Whether a name in the root (`only`) or anywhere (a restore's temporary file) is never kept. */
  leftOut(name: string, parentRel: string): boolean {
    return name.startsWith(RESTORE_TEMP_PREFIX) || (this.only !== undefined && parentRel === '' && !this.only.has(name));
  }

  /** The entries of a folder, sorted by the bytes of their names; undefined when it cannot be listed. */
  private list(abs: RawPath, rel: RawPath | undefined): Array<Dirent<string> | Dirent<Buffer>> | undefined {
    try {
      if (typeof abs === 'string') {
        const dirents = readdirSync(abs, { withFileTypes: true });
        if (!dirents.some((dirent) => dirent.name.includes(REPLACEMENT))) {
          return dirents.every((dirent) => isAscii(dirent.name))
            ? dirents.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
            : dirents.sort((a, b) => byCodePoint(a.name, b.name));
        }
      }
      const raw = readdirSync(typeof abs === 'string' ? Buffer.from(abs) : abs, { withFileTypes: true, encoding: 'buffer' }) as Dirent<Buffer>[];
      return raw.sort((a, b) => Buffer.compare(a.name, b.name));
    } catch (error) {
      if (errno(error) === 'ENOENT' || errno(error) === 'ENOTDIR') return undefined;
      if (errno(error) === 'EACCES' || errno(error) === 'EPERM') return void this.report(rel ?? '', 'unreadable');
      throw error;
    }
  }
}

const nameOf = (entry: Walked) => {
  const rel = entry.rel as string;
  return rel.slice(rel.lastIndexOf('/') + 1);
};

/**
 * The walk from the journal's base: a folder with no change noted is the base's entries as they
 * were; in one with changes the noted names are read again (a folder among them walked afresh,
 * its watches placed again) and merged in name order, and the folder's own entry is read again
 * (its mtime moved). A folder noted as a whole is walked afresh. Reports of the base are kept
 * for the paths not read again.
 */
async function patchWalk(walker: Walker, base: JournalBase): Promise<void> {
  const { children, dirty } = base;
  const journal = walker.journal!;
  const afresh: string[] = [];
  const reread = new Set<string>();
  const walkAfresh = async (rel: string, abs: string) => {
    journal.forgetBelow(rel);
    afresh.push(rel);
    await walker.walkDir(abs, rel === '' ? undefined : rel);
  };
  const visit = async (dirRel: string, dirAbs: string): Promise<void> => {
    while (walker.slicer.due()) await walker.slicer.pass();
    const marks = dirty.get(dirRel);
    if (marks === null) return walkAfresh(dirRel, dirAbs);
    const kids = children.get(dirRel) ?? [];
    let merged: ReadonlyArray<Walked | string> = kids;
    if (marks) {
      const byName = new Map<string, Walked | string>(kids.map((kid) => [nameOf(kid), kid]));
      for (const name of marks) byName.set(name, name);
      const names = [...byName.keys()];
      merged = (names.every(isAscii) ? names.sort() : names.sort(byCodePoint)).map((name) => byName.get(name)!);
    }
    for (const kid of merged) {
      if (typeof kid !== 'string') {
        const rel = kid.rel as string;
        if (kid.kind !== 'dir') {
          walker.entries.push(kid);
        } else if (dirty.has(rel)) {
          // Names changed in it: its own mtime moved too. Kept before, so not matched again.
          if (walker.entryAt(kid.abs, rel, rel, false)?.kind === 'dir') await visit(rel, kid.abs as string);
        } else {
          walker.entries.push(kid);
          await visit(rel, kid.abs as string);
        }
        continue;
      }
      const rel = dirRel === '' ? kid : `${dirRel}/${kid}`;
      reread.add(rel);
      if (children.has(rel)) {
        // A folder before: whatever it is now, nothing of the base below it is kept.
        journal.forgetBelow(rel);
        afresh.push(rel);
      }
      if (walker.leftOut(kid, dirRel)) continue;
      const abs = `${dirAbs}/${kid}`;
      if (walker.entryAt(abs, rel, rel, true)?.kind === 'dir') await walkAfresh(rel, abs);
    }
  };
  await visit('', walker.root.dir);
  for (const report of base.skipped) {
    const path = report.path;
    if (reread.has(path) || afresh.some((rel) => rel === '' || path === rel || path.startsWith(`${rel}/`))) continue;
    walker.keepReport(report);
  }
}

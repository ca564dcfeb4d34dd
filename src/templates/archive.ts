// A template's archive, copied from the templates folder into the data folder's archive store by
// its sha256, the way an uploaded ZIP is kept, after the same checks as an upload.
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { ArchiveError, planArchive } from '../workspace/archive-source.ts';
import { storeArchive, uploadsDir } from '../workspace/archives.ts';
import type { DataLayout } from '../workspace/layout.ts';
import { copyInside, UnsafeFileError } from './read-file.ts';
import { archivePathProblem, archiveRule, type TemplateCheckContext } from './validate.ts';

/** Why a template's archive cannot be used; the message completes "archive <path>: …". */
export class TemplateArchiveError extends Error {}

/** Copies the archive at `path` (relative to the templates folder) into the store; returns its sha256. */
export async function storeTemplateArchive(ctx: TemplateCheckContext, layout: DataLayout, path: string): Promise<string> {
  const problem = archivePathProblem(path);
  if (problem) throw new TemplateArchiveError(problem);
  const dir = uploadsDir(layout);
  await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  const copy = join(dir, `template-${randomBytes(8).toString('hex')}.zip`);
  try {
    if (!(await copyInside(ctx.dir, join(ctx.dir, path), ctx.maxArchiveBytes, archiveRule(ctx.maxArchiveBytes), copy))) {
      throw new TemplateArchiveError(`"${path}" is not in the templates folder: put the ZIP there, or fix the path`);
    }
    planArchive(copy);
    return await storeArchive(layout, copy);
  } catch (error) {
    if (error instanceof UnsafeFileError || error instanceof ArchiveError) throw new TemplateArchiveError(`"${path}" ${error instanceof ArchiveError ? `is not an archive the service extracts: ${error.message}` : error.message}`);
    throw error;
  } finally {
    // Moved into the store when it was kept; otherwise not wanted.
    await fs.rm(copy, { force: true });
  }
}

// File operations that never replace a file they did not mean to: a rename that reports a file
// gone since it was read, and a link that refuses to replace whatever is at its target (the
// manifest store's read-modify-write protocol is built on both).
import { promises as fs } from 'node:fs';

export async function renameIfThere(from: string, to: string): Promise<boolean> {
  try {
    await fs.rename(from, to);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
}

/** Links `from` at `to` unless something is there already: never replaces a file. */
export async function linkUnlessTaken(from: string, to: string): Promise<boolean> {
  try {
    await fs.link(from, to);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
}


// Files that hold a secret (the access token, the client secret): written whole or not at all,
// readable by the service's user only, and durable once the write returns.
import { promises as fs } from 'node:fs';
import { writeFileAtomic } from '../core/atomic-write.ts';

/**
 * Replaces `file` with `text`, mode 0600 from its first byte, flushed to disk with its folder: a
 * reader sees the old file or the new one, never half of one, and a token handed out is not lost.
 */
export async function writeSecretFile(file: string, text: string): Promise<void> {
  await writeFileAtomic(file, text, { mode: 0o600, durable: true });
}

/** A folder for secret files: made if missing, and closed to other users (0700) either way. */
export async function secretFolder(dir: string): Promise<void> {
  await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  await fs.chmod(dir, 0o700);
}

/** Creates an empty file with mode 0600 when there is none; an existing one keeps its text and is made 0600. */
export async function ensureSecretFile(file: string): Promise<void> {
  const handle = await fs.open(file, 'a', 0o600);
  try {
    await handle.chmod(0o600);
  } finally {
    await handle.close();
  }
}

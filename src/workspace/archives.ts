// Uploaded ZIPs, kept under the data folder by content hash (archives/<sha256>.zip), so a
// manifest can name one by its hash and the controller can extract it again after a crash.
import { createHash } from 'node:crypto';
import { createReadStream, promises as fs } from 'node:fs';
import { join } from 'node:path';
import type { DataLayout } from './layout.ts';

export const archivesDir = (layout: DataLayout): string => join(layout.dataDir, 'archives');
export const archivePath = (layout: DataLayout, sha256: string): string => join(archivesDir(layout), `${sha256}.zip`);
/** Where multer streams uploads to before they are hashed (same file system: a rename moves them). */
export const uploadsDir = (layout: DataLayout): string => join(layout.dataDir, 'uploads');

async function sha256Of(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Moves an uploaded file into the store (owner-only); the same bytes uploaded twice are kept once. */
export async function storeArchive(layout: DataLayout, uploaded: string): Promise<string> {
  const sha256 = await sha256Of(uploaded);
  await fs.mkdir(archivesDir(layout), { recursive: true, mode: 0o700 });
  await fs.chmod(uploaded, 0o600);
  await fs.rename(uploaded, archivePath(layout, sha256));
  return sha256;
}

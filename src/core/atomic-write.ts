// Writes a small file so readers see the old text or the new, never half of one: the text goes
// to a temporary file beside it, which is then renamed into place.
import { promises as fs } from 'node:fs';

export async function writeFileAtomic(file: string, text: string): Promise<void> {
  await fs.writeFile(`${file}.tmp`, text);
  await fs.rename(`${file}.tmp`, file);
}

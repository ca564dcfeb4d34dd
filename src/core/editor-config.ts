// code-server's config file, which every code-server invocation (an editor, the extension CLI,
// doctor's --version) is given.
import { promises as fs } from 'node:fs';

/**
 * Writes code-server's config file when it is missing. Every code-server invocation gets one
 * with --config: without it code-server reads, and first writes with a password,
 * ~/.config/code-server/config.yaml, even for --version.
 */
export async function writeEditorConfig(path: string): Promise<void> {
  await fs.writeFile(path, 'auth: none\ncert: false\n', { flag: 'wx' }).catch((error) => {
    if (error.code !== 'EEXIST') throw error;
  });
}

// The `ccr` command editors find on their PATH: claude-code-router run by the service's own
// Node.js, with the HOME whose configuration the service writes, so `ccr code` in an editor
// terminal talks to the router the service runs.
import { promises as fs } from 'node:fs';
import { dirname, join } from 'node:path';
import { writeFileAtomic } from '../core/atomic-write.ts';

export interface CcrShim {
  binDir: string;
  nodePath: string;
  cliPath: string;
  homeDir: string;
}

/** A word for sh in single quotes: nothing inside is expanded. */
const quote = (value: string) => `'${value.replaceAll("'", `'\\''`)}'`;

export function ccrShimText(shim: CcrShim): string {
  return [
    '#!/bin/sh',
    '# Written by devbox-controller at start-up: claude-code-router (ccr) with the service\'s Node.js,',
    '# reading the configuration the service keeps under HOME/.claude-code-router.',
    // The router starts `node` by name (`ccr code` when it is not running): the same Node.js, first on PATH.
    `PATH=${quote(dirname(shim.nodePath))}:"$PATH"`,
    `HOME=${quote(shim.homeDir)}`,
    'export PATH HOME',
    `exec ${quote(shim.nodePath)} ${quote(shim.cliPath)} "$@"`,
    '',
  ].join('\n');
}

/** Writes <binDir>/ccr (mode 0755) whole, replacing an earlier one. */
export async function writeCcrShim(shim: CcrShim): Promise<string> {
  const file = join(shim.binDir, 'ccr');
  await fs.mkdir(shim.binDir, { recursive: true });
  // Not flushed to disk: the service writes it again at every start of the router.
  await writeFileAtomic(file, ccrShimText(shim), { mode: 0o755 });
  return file;
}

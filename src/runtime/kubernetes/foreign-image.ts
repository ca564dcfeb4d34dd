// An editor in an image of the repository's own (devcontainer.json's `image`, StartSpec.image):
// the editor's container runs that image, so its toolchain is there, and code-server is brought
// to it, since such an image has none. Two ways, chosen by the config (KubernetesRuntimeOptions'
// codeServerFrom, else by where the launcher is):
//   mounts  the config's extra mounts already hold code-server (a host folder, as on the test
//           cluster): they are mounted into every editor container, whatever its image, so the
//           configured command runs as it is;
//   copy    an init container of the configured editor image copies code-server's install folder
//           (the launcher's `..`, e.g. /usr/lib/code-server of code-server's published image)
//           into the server's volume, once per editor image: a later start finds the copy and
//           copies nothing; a copy for another image is removed once the new one is whole. The
//           editor's container runs the copy's launcher.
// The foreign image needs a POSIX shell (the editor runs through `sh -c`) and a libc that
// code-server's Node.js runs on (glibc for the published image): an image without them ends the
// editor at its start, which the runtime reports as any editor's exit.
import { createHash } from 'node:crypto';
import { posix } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { EDITOR_CONTAINER, EDITOR_ROOT } from './names.ts';
import type { KubernetesRuntimeOptions } from './options.ts';

/** The init container that copies code-server into the volume. */
export const PROVIDE_CONTAINER = 'provide-code-server';
/** Where the copies are kept in the volume, one folder per editor image. */
export const COPIES_DIR = `${EDITOR_ROOT}/code-server`;
/** The name, in a copy, of the link to its launcher (the editor's container runs it). */
const LAUNCHER_LINK = 'devbox-launcher';
/** The editor's container command starts with `sh -c <run once> code-server`: what follows is the editor's own command. */
const RUN_ONCE_WORDS = 4;

const SHELLS = new Set(['sh', 'bash', 'dash', 'ash']);

/** The launcher in the configured command: its first word, or the second when the first is a shell (`sh /path/bin/code-server`). */
export function launcherIndex(command: readonly string[]): number {
  return command.length > 1 && SHELLS.has(posix.basename(command[0])) ? 1 : 0;
}

/** How code-server reaches a foreign image: `mounts` when the launcher lies in one of the config's extra mounts, else `copy`. */
export function codeServerSource(options: Pick<KubernetesRuntimeOptions, 'command' | 'extraMounts' | 'codeServerFrom'>): 'mounts' | 'copy' {
  if (options.codeServerFrom) return options.codeServerFrom;
  const launcher = options.command[launcherIndex(options.command)] ?? '';
  const inMount = options.extraMounts.some((m) => {
    const root = m.mountPath.replace(/\/+$/, '');
    return launcher.startsWith(`${root}/`);
  });
  return inMount ? 'mounts' : 'copy';
}

/** The copy's folder for this editor image and launcher: a new image (a new code-server version) gets a new copy. */
export function copyKey(image: string, launcher: string): string {
  return createHash('sha256').update(`${image}\0${launcher}`).digest('hex').slice(0, 16);
}

/**
 * `sh -c PROVIDE_SCRIPT provide <launcher> <key>`: copies the launcher's install folder into
 * COPIES_DIR/<key> unless a whole copy is there, then removes the copies of other keys, and says
 * what it did in its termination message: `#kept <key>`, or `#copied <key> <KiB> <seconds>`.
 * Copied into a partial folder first and renamed once whole, so a copy cut short is never run.
 */
export const PROVIDE_SCRIPT = [
  'set -e',
  `base=\${DEVBOX_COPIES_DIR:-${COPIES_DIR}}; want="$base/$2"; report=\${DEVBOX_REPORT:-/dev/termination-log}`,
  `if [ -f "$want/.devbox-complete" ]; then echo "#kept $2" > "$report"; exit 0; fi`,
  'found=$(command -v "$1") || { echo "code-server ($1) is not in the editor image: set runtime.kubernetes.command to its path" >&2; exit 1; }',
  'real=$(readlink -f "$found"); root=$(dirname "$(dirname "$real")")',
  'start=$(date +%s); mkdir -p "$base"; rm -rf "$base"/.partial-*; tmp="$base/.partial-$$"',
  'cp -a "$root" "$tmp"',
  `ln -s "\${real#"$root"/}" "$tmp/${LAUNCHER_LINK}"`,
  ': > "$tmp/.devbox-complete"',
  'for old in "$base"/*; do if [ "$old" != "$want" ]; then rm -rf "$old"; fi; done',
  'mv "$tmp" "$want"',
  'echo "#copied $2 $(du -sk "$want" | cut -f1) $(( $(date +%s) - start ))" > "$report"',
].join('\n');

/** What the editor's Pod needs to run the editor in a foreign image: the init container (copy) and the editor's own command. */
export interface ForeignEditor {
  init?: { name: string; command: string[] };
  command: string[];
}

/** The editor's command (and init container) in `image`; undefined when it is the configured editor image itself. */
export function foreignEditor(options: KubernetesRuntimeOptions, image: string | undefined): ForeignEditor | undefined {
  if (!image || image === options.image) return undefined;
  if (codeServerSource(options) === 'mounts') return { command: options.command };
  const at = launcherIndex(options.command);
  const launcher = options.command[at] ?? 'code-server';
  const key = copyKey(options.image, launcher);
  const command = [...options.command];
  command[at] = `${COPIES_DIR}/${key}/${LAUNCHER_LINK}`;
  return { init: { name: PROVIDE_CONTAINER, command: ['sh', '-c', PROVIDE_SCRIPT, 'provide', launcher, key] }, command };
}

/** The editor's own command in a Pod the runtime made (code-server and its launcher, without the run-once wrapper); undefined for another Pod. */
export function editorCommandOf(pod: V1Pod | undefined): string[] | undefined {
  const command = pod?.spec?.containers?.find((c) => c.name === EDITOR_CONTAINER)?.command;
  return command && command.length > RUN_ONCE_WORDS && command[3] === 'code-server' ? command.slice(RUN_ONCE_WORDS) : undefined;
}

/** What the copying init container said: kept, or copied (KiB and seconds); undefined when it did not run or said nothing. */
export function provideReport(pod: V1Pod): { kept: true } | { copiedKiB: number; seconds: number } | undefined {
  const status = pod.status?.initContainerStatuses?.find((c) => c.name === PROVIDE_CONTAINER);
  const message = status?.state?.terminated?.message?.trim() ?? '';
  if (message.startsWith('#kept ')) return { kept: true };
  const copied = /^#copied \S+ (\d+) (\d+)$/.exec(message);
  return copied ? { copiedKiB: Number(copied[1]), seconds: Number(copied[2]) } : undefined;
}

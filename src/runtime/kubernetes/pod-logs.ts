// An editor's output from the Pod log API, as the runtime interface's log stream: the current
// container's log (whole, or from now on), then each next container of the server as it starts,
// until the caller aborts. The log API merges stdout and stderr: every line comes as stdout.
import type { V1Pod } from '@kubernetes/client-node';
import type { EditorOutput } from '../interface.ts';
import type { ClusterApi } from './cluster-api.ts';
import { EDITOR_CONTAINER } from './names.ts';
import { editorStatus } from './pod-state.ts';

export interface LogSource {
  client: Pick<ClusterApi, 'containerLog'>;
  /** The server's editor Pod now, if any. */
  editorPod(name: string): V1Pod | undefined;
  /** Resolves at the next change of the server's Pods (or when the signal aborts). */
  nextChange(name: string, signal: AbortSignal): Promise<void>;
}

/** A container run: its Pod's uid and how many times it restarted. */
const runOf = (pod: V1Pod) => `${pod.metadata?.uid}/${editorStatus(pod)?.restartCount ?? 0}`;
const hasStarted = (pod: V1Pod) => {
  const state = editorStatus(pod)?.state;
  return state?.running !== undefined || state?.terminated !== undefined;
};

/** A log line as the API gives it with timestamps: its time (ms) and its text. */
function parseLine(raw: string): { at: number; line: string } {
  const space = raw.indexOf(' ');
  const at = Date.parse(`${raw.slice(0, Math.min(space, 23))}Z`);
  return Number.isFinite(at) && space > 0 ? { at, line: raw.slice(space + 1) } : { at: Number.NaN, line: raw };
}

export async function* podLogs(source: LogSource, name: string, options: { signal: AbortSignal; since?: 'now' | 'start' }): AsyncIterable<EditorOutput> {
  const { signal } = options;
  // Since 'now', what any container printed before this moment is left out (by the log's own times).
  const notBefore = options.since === 'start' ? undefined : Date.now();
  let followedRun: string | undefined;
  while (!signal.aborted) {
    const pod = source.editorPod(name);
    if (!pod || !hasStarted(pod) || runOf(pod) === followedRun) {
      await source.nextChange(name, signal);
      continue;
    }
    followedRun = runOf(pod);
    const lines: string[] = [];
    let wake: (() => void) | undefined;
    let partial = '';
    let ended = false;
    const onText = (text: string) => {
      const parts = (partial + text).split('\n');
      partial = parts.pop() ?? '';
      lines.push(...parts);
      wake?.();
    };
    const stop = new AbortController();
    const onAbort = () => stop.abort();
    signal.addEventListener('abort', onAbort, { once: true });
    const following = source.client.containerLog(pod.metadata!.name!, EDITOR_CONTAINER, { follow: true }, onText, stop.signal).finally(() => {
      ended = true;
      wake?.();
    });
    const told = (raw: string) => {
      const { at, line } = parseLine(raw);
      return notBefore !== undefined && at < notBefore ? undefined : line;
    };
    try {
      while (!signal.aborted) {
        while (lines.length > 0) {
          const line = told(lines.shift()!);
          if (line !== undefined) yield { stream: 'stdout', line };
        }
        if (ended) break;
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
      }
      const last = partial ? told(partial) : undefined;
      if (last !== undefined) yield { stream: 'stdout', line: last };
    } finally {
      stop.abort();
      signal.removeEventListener('abort', onAbort);
      await following;
    }
  }
}

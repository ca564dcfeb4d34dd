// An editor's output from the Pod log API, as the runtime interface's log stream. The editor runs
// once per Pod (objects.ts), in the Pod's first container run, so that run's log is the editor's
// output: followed while it runs, read from the container's previous run once the kubelet has
// started another (which finds the editor already ran), and, once the Pod is gone, from what the
// runtime kept of it. Each Pod's editor is read once per stream, its lines told once even when
// the log is read again (after a broken connection), until the caller aborts. The log API merges
// stdout and stderr: every line comes as stdout.
import type { V1Pod } from '@kubernetes/client-node';
import type { EditorOutput } from '../interface.ts';
import type { ClusterApi } from './cluster-api.ts';
import { ALREADY_RAN, EDITOR_CONTAINER } from './names.ts';
import { editorRun } from './pod-state.ts';

export interface LogSource {
  client: Pick<ClusterApi, 'containerLog'>;
  /** The server's editor Pod in the runtime's view, even while it ends. */
  editorPod(name: string): V1Pod | undefined;
  /** What was kept of the output of the server's last editor that ended, and the uid of its Pod. */
  keptOutput(name: string): { uid: string; text: string } | undefined;
  /** Resolves at the next change of the server's Pods (or when the signal aborts). */
  nextChange(name: string, signal: AbortSignal): Promise<void>;
}

/** How many of an ended editor's last lines the runtime keeps for the log stream. */
export const KEPT_LINES = 500;

/** A log line as the API gives it with timestamps: its time (ms), a key that orders lines to the nanosecond, and its text. */
function parseLine(raw: string): { at: number; key: string | undefined; line: string } {
  const space = raw.indexOf(' ');
  const stamp = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?Z$/.exec(space > 0 ? raw.slice(0, space) : '');
  if (!stamp) return { at: Number.NaN, key: undefined, line: raw };
  const fraction = (stamp[2] ?? '').padEnd(9, '0');
  return { at: Date.parse(`${stamp[1]}.${fraction.slice(0, 3)}Z`), key: `${stamp[1]}.${fraction}`, line: raw.slice(space + 1) };
}

/** Text that arrives in pieces, as whole lines. */
class Lines {
  readonly lines: string[] = [];
  #partial = '';
  add(text: string): void {
    const parts = (this.#partial + text).split('\n');
    this.#partial = parts.pop() ?? '';
    this.lines.push(...parts);
  }
  end(): void {
    if (this.#partial) this.lines.push(this.#partial);
    this.#partial = '';
  }
}

/**
 * The editor's last output in its Pod (its run's last lines, read within `timeoutMs`), for the
 * runtime to keep once the Pod goes. Both the current and the previous container runs are read
 * and only the lines up to the run's end kept: the Pod's status may still show the editor's run
 * as the current one while the kubelet has already started the next.
 */
export async function lastOutput(client: Pick<ClusterApi, 'containerLog'>, pod: V1Pod, timeoutMs = 5000): Promise<string | undefined> {
  const run = editorRun(pod);
  if (!run) return undefined;
  const signal = AbortSignal.timeout(timeoutMs);
  const read = async (previous: boolean) => {
    const lines = new Lines();
    await client.containerLog(pod.metadata!.name!, EDITOR_CONTAINER, { follow: false, previous, tailLines: KEPT_LINES }, (text) => lines.add(text), signal);
    lines.end();
    return lines.lines;
  };
  const raws = run.over && !run.previous ? [...await read(true), ...await read(false)] : await read(run.previous);
  const byKey = new Map<string, string>();
  for (const raw of raws) {
    const { at, key } = parseLine(raw);
    if (run.until !== undefined && at > run.until) continue;
    byKey.set(key ?? `~${byKey.size}`, raw);
  }
  const ordered = [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, raw]) => raw);
  // The next run's first words, and what follows them, are not the editor's.
  const next = ordered.findIndex((raw) => parseLine(raw).line.startsWith(ALREADY_RAN));
  const kept = (next < 0 ? ordered : ordered.slice(0, next)).slice(-KEPT_LINES);
  return kept.length > 0 ? `${kept.join('\n')}\n` : undefined;
}

export async function* podLogs(source: LogSource, name: string, options: { signal: AbortSignal; since?: 'now' | 'start' }): AsyncIterable<EditorOutput> {
  const { signal } = options;
  // Since 'now', what any container printed before this moment is left out (by the log's own times).
  const notBefore = options.since === 'start' ? undefined : Date.now();
  /** Pods whose editor's output was read to its end. */
  const done = new Set<string>();
  /** The time of the last line told of each Pod: a log read again tells only what comes after it. */
  const told = new Map<string, string>();

  /** The lines of one reading not yet told, in order. */
  function* fresh(uid: string, raws: string[], after: string | undefined, until?: number): Iterable<EditorOutput> {
    for (const raw of raws) {
      const { at, key, line } = parseLine(raw);
      // A line of the run the kubelet started after the editor's (the Pod's status lags it): that
      // run's first words, or a time past the editor's end.
      if (line.startsWith(ALREADY_RAN)) return;
      if (until !== undefined && at > until) continue;
      if (key !== undefined && after !== undefined && key <= after) continue;
      if (key !== undefined) told.set(uid, key);
      if (notBefore !== undefined && !(at >= notBefore)) continue;
      yield { stream: 'stdout', line };
    }
  }

  while (!signal.aborted) {
    const pod = source.editorPod(name);
    const uid = pod?.metadata?.uid;
    const run = pod && editorRun(pod);
    // What the runtime kept of an editor that ended (read as it ended) goes first: once the kubelet
    // has run the container again and that run ended too, it may have removed this run's log (it
    // keeps one dead container), so the Pod's log may no longer hold it.
    const kept = source.keptOutput(name);
    if (kept && !done.has(kept.uid) && (!pod || uid === kept.uid)) {
      done.add(kept.uid);
      yield* fresh(kept.uid, kept.text.split('\n').filter(Boolean), told.get(kept.uid));
      continue;
    }
    if (pod && uid && run && !done.has(uid)) {
      const after = told.get(uid);
      const lines = new Lines();
      let wake: (() => void) | undefined;
      let ended = false;
      const stop = new AbortController();
      const onAbort = () => stop.abort();
      signal.addEventListener('abort', onAbort, { once: true });
      const reading = source.client.containerLog(pod.metadata!.name!, EDITOR_CONTAINER, { follow: !run.over, previous: run.previous }, (text) => {
        lines.add(text);
        wake?.();
      }, stop.signal).finally(() => {
        ended = true;
        wake?.();
      });
      try {
        while (!signal.aborted) {
          // Waits only with nothing to tell: text may have come while the last lines were told.
          if (lines.lines.length === 0 && !ended) await new Promise<void>((resolve) => (wake = resolve));
          wake = undefined;
          if (ended) lines.end();
          yield* fresh(uid, lines.lines.splice(0), after, run.until);
          if (ended) break;
        }
      } finally {
        stop.abort();
        signal.removeEventListener('abort', onAbort);
        await reading;
      }
      // A run read after it ended is read whole (unless its log was gone: then what the runtime
      // keeps of it is waited for); one that was running is read again (what is new only) once
      // the runtime's view changes: it ended, or the connection broke.
      if (run.over && told.has(uid)) done.add(uid);
      else await source.nextChange(name, signal);
      continue;
    }
    await source.nextChange(name, signal);
  }
}

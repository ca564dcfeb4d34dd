// The Kubernetes runtime's log stream over an in-memory cluster (test/helpers/fake-cluster.ts):
// the editor's own output, which is its Pod's first container run, told once: followed while it
// runs, read from the previous run once the kubelet started the container again, and from what
// the runtime kept once the Pod is gone; never the later runs' words, never a line twice.
import { afterEach, describe, expect, it } from 'vitest';
import type { EditorOutput } from '../../../src/runtime/interface.ts';
import type { KubernetesWorkload } from '../../../src/runtime/kubernetes/runtime.ts';
import { FakeCluster, runtimeOn } from '../../helpers/fake-cluster.ts';
import { eventually } from '../../helpers/wait.ts';

const runtimes: Array<KubernetesWorkload<FakeCluster>> = [];
const streams: AbortController[] = [];
afterEach(() => {
  for (const stream of streams.splice(0)) stream.abort();
  for (const runtime of runtimes.splice(0)) runtime.dispose();
});

async function newRuntime(cluster: FakeCluster): Promise<KubernetesWorkload<FakeCluster>> {
  const runtime = await runtimeOn(cluster);
  runtimes.push(runtime);
  return runtime;
}

/** Reads the server's log stream into `lines` until the test ends. */
function follow(runtime: KubernetesWorkload<FakeCluster>, name: string, since: 'now' | 'start'): string[] {
  const lines: string[] = [];
  const stop = new AbortController();
  streams.push(stop);
  void (async () => {
    for await (const output of runtime.logs(name, { signal: stop.signal, since }) as AsyncIterable<EditorOutput>) lines.push(output.line);
  })();
  return lines;
}

/** A server whose editor Pod's first container runs (not started through the runtime: as any Pod the watch sees). */
async function editorPod(cluster: FakeCluster, runtime: KubernetesWorkload<FakeCluster>, name: string): Promise<string> {
  const starting = runtime.start({ name, port: 8400 });
  const pod = await eventually(() => cluster.pod(`devbox-${name}-0`));
  cluster.runEditor(pod.metadata!.name!);
  await starting;
  return pod.metadata!.name!;
}

/** What the stub prints when it cannot start, then the run-once wrapper's words when the kubelet starts the container again. */
function crashAtStart(cluster: FakeCluster, pod: string): void {
  cluster.print(pod, '[stub] starting on port 8400', '[stub] cannot start on port 8400: exiting with code 1 on purpose');
  cluster.endEditor(pod, 1);
  cluster.restartEditor(pod);
  cluster.print(pod, 'devbox: the editor already ran in this Pod: the controller decides whether it starts again');
  cluster.endEditor(pod, 123);
}

const SAID = ['[stub] starting on port 8400', '[stub] cannot start on port 8400: exiting with code 1 on purpose'];

describe("an editor's log stream", () => {
  it('follows what the editor prints, and after its crash tells each line once, never the later run\'s words', async () => {
    const cluster = new FakeCluster();
    const runtime = await newRuntime(cluster);
    const pod = await editorPod(cluster, runtime, 'alpha');
    const lines = follow(runtime, 'alpha', 'start');
    cluster.print(pod, 'first');
    await eventually(() => lines.includes('first'));
    crashAtStart(cluster, pod);
    await eventually(() => cluster.pod(pod) === undefined);
    // The next editor's first line comes after everything the stream had to tell of the last one.
    const next = await editorPod(cluster, runtime, 'alpha');
    cluster.print(next, 'next editor');
    await eventually(() => lines.includes('next editor'));
    expect(lines).toEqual(['first', ...SAID, 'next editor']);
  });

  it('reads a running editor\'s log again after a broken connection, telling only what is new', async () => {
    const cluster = new FakeCluster();
    const runtime = await newRuntime(cluster);
    const pod = await editorPod(cluster, runtime, 'alpha');
    const lines = follow(runtime, 'alpha', 'start');
    cluster.print(pod, 'one', 'two');
    await eventually(() => lines.length === 2);
    cluster.cutLogStreams();
    cluster.print(pod, 'three');
    // The Pod's next change (here its readiness) is when the stream looks again.
    await eventually(() => {
      cluster.updatePod(pod, (p) => (p.status!.containerStatuses![0].ready = !p.status!.containerStatuses![0].ready));
      return lines.includes('three');
    });
    expect(lines).toEqual(['one', 'two', 'three']);
    expect(cluster.callsOf('log')).toEqual(['Pod/devbox-alpha-0', 'Pod/devbox-alpha-0']);
  });

  it('reads the previous run of an editor that ended before the stream opened', async () => {
    const cluster = new FakeCluster();
    cluster.holdDeletions = true;
    const runtime = await newRuntime(cluster);
    const pod = await editorPod(cluster, runtime, 'alpha');
    crashAtStart(cluster, pod);
    await eventually(() => cluster.pod(pod)?.metadata?.deletionTimestamp);
    const lines = follow(runtime, 'alpha', 'start');
    await eventually(() => lines.length === 2 && lines);
    expect(lines).toEqual(SAID);
  });

  it('tells what was kept of an editor whose Pod went before its output was read, and only for that Pod', async () => {
    const cluster = new FakeCluster();
    const runtime = await newRuntime(cluster);
    const pod = await editorPod(cluster, runtime, 'alpha');
    crashAtStart(cluster, pod);
    await eventually(() => cluster.pod(pod) === undefined);
    const lines = follow(runtime, 'alpha', 'start');
    await eventually(() => lines.length === 2 && lines);
    expect(lines).toEqual(SAID);

    // The next editor's stream tells its own output only: not what was kept of the one before.
    const next = await editorPod(cluster, runtime, 'alpha');
    const fresh = follow(runtime, 'alpha', 'start');
    cluster.print(next, 'second editor');
    await eventually(() => fresh.includes('second editor'));
    expect(fresh).toEqual(['second editor']);
  });

  it("since 'now' leaves out what was printed before the stream opened", async () => {
    const cluster = new FakeCluster();
    const runtime = await newRuntime(cluster);
    const pod = await editorPod(cluster, runtime, 'alpha');
    cluster.print(pod, 'before');
    const printed = Date.now();
    // The stream opens a millisecond later at least: the log's times are compared to the millisecond.
    await eventually(() => Date.now() > printed, 1000, 1);
    const lines = follow(runtime, 'alpha', 'now');
    await eventually(() => cluster.callsOf('log').length === 1);
    // A line with a later time than the stream's opening (the log's own times, to the millisecond).
    await eventually(() => {
      cluster.print(pod, 'after');
      return lines.includes('after');
    }, 5000, 20);
    expect(lines.every((l) => l === 'after')).toBe(true);
  });
});

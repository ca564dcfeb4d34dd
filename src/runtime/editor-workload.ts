// One half of a runtime: the editor that runs on a server's storage (a local process, a Pod). The
// controller starts and stops it, asks its state from the workload's own cache, adopts one found
// running after a restart, and reads its output and usage. Whether it serves is not asked here:
// the editor's /healthz is asked the same way whatever runs it (health.ts, EditorHealth). Every
// workload passes the same behaviour suite (test/runtime/conformance.ts).
import type { CommandLine } from '../devcontainer/types.ts';
import type {
  CommandEnd, EditorEndpoint, EditorOutput, EditorState, EditorUsage, MachineMemory, RunningEditor, RuntimeEvent, RuntimeRef, StartedEditor, StartSpec,
} from './interface.ts';

export interface EditorWorkload {
  /** Names the runtime in logs and in the references it makes (RuntimeRef.kind). */
  readonly kind: string;
  /** True when the workload runs each editor in an image, so a StartSpec's image is honoured (a cluster); absent: it is not. */
  readonly runsImages?: boolean;
  /**
   * Optional: true when the route number can be given to an editor now (local processes: nothing
   * on this machine listens on it). Absent where the route number is no port of this machine
   * (a Pod's own network): every free route number will do.
   */
  portIsFree?(port: number): Promise<boolean>;
  /** Starts the server's editor; the reference is what status records. */
  start(spec: StartSpec): Promise<StartedEditor>;
  /** Stops the editor; false, and nothing signalled, when the reference is not server `name`'s editor. */
  stop(name: string, ref: RuntimeRef, graceMs: number): Promise<boolean>;
  /** The editor's state from the workload's cache (see EditorState). Any reference is safe to ask about. */
  state(name: string, ref: RuntimeRef): EditorState;
  /**
   * Takes over an editor the workload did not start in this run (after a restart): its endpoint
   * when the reference is, right now, server `name`'s running editor, and from then on it is
   * watched like one started; undefined (nothing watched) otherwise. `port` is the route number
   * status recorded, for an editor whose own port the workload cannot read; the endpoint is
   * undefined only when neither is known.
   */
  adopt(name: string, ref: RuntimeRef, port?: number): { endpoint: EditorEndpoint | undefined } | undefined;
  /** The editors this workload runs for this service, whatever the controller remembers. */
  list(): Promise<RunningEditor[]>;
  /** The memory the editors share, for capacity's `auto` limit; undefined when there is none to offer (a cluster's scheduler decides). */
  memory(): MachineMemory | undefined;
  /** CPU and memory by reference; an editor gone meanwhile is left out. */
  usage(refs: RuntimeRef[]): Promise<Map<RuntimeRef, EditorUsage>>;
  /** The editor's output from now on (and what is still kept of before, with `since: 'start'`), until the signal aborts. */
  logs(name: string, options: { signal: AbortSignal; since?: 'now' | 'start' }): AsyncIterable<EditorOutput>;
  /** Called with a server's name whenever one of its editors changed state (exited, became ready, a problem came or went); the controller queues the name. */
  onChange(listener: (name: string) => void): void;
  /** Called with what the platform says about a server's editor (a workload without such events never calls it). */
  onEvent(listener: (name: string, event: RuntimeEvent) => void): void;
  /**
   * Resolves once the workload's view is current (a cluster's first list of its objects): state(),
   * adopt() and list() answer from it. The service waits for it before the controller adopts
   * anything; the process workload's view is current at once.
   */
  synced(): Promise<void>;
  /**
   * Optional: stops every editor of this service the controller does not track (one left running
   * while its manifest is invalid), at a shutdown that stops the editors. Absent where the
   * platform keeps nothing the controller does not know of.
   */
  stopStrays?(graceMs: number): Promise<void>;
  /**
   * Optional: runs one command beside the server's running editor, where its programs run (a
   * local process in the workspace with the editor's environment; on a cluster, in the editor's
   * container), its output line by line to `onOutput`, until it ends or the signal aborts (then
   * it and everything it started are ended). Absent: the runtime cannot run commands for a server.
   */
  run?(name: string, ref: RuntimeRef, command: CommandLine, options: RunOptions): Promise<CommandEnd>;
  /**
   * Optional: who listens on a port the editor's programs may use, for the proxy's forwarded
   * ports: `this` (a program of server `name`'s editor), `other` (anything else on the machine:
   * never forwarded) or `none`. Absent where every editor has a network of its own (a Pod), so a
   * port there is the server's.
   */
  listenerOf?(name: string, port: number): Promise<'this' | 'other' | 'none'>;
  /**
   * Optional, beside listenerOf: the ports server `name`'s programs listen on now (its editor's
   * own among them), for the listing of its forwarded ports. Absent where it is not known.
   */
  portsOf?(name: string): Promise<number[]>;
  /** Stops watching (editors keep running). */
  dispose(): void;
}

export interface RunOptions {
  /** The folder it runs in (the workspace, as the editor sees it). */
  cwd: string;
  /** Variables over the editor's own environment. */
  env: Record<string, string>;
  signal: AbortSignal;
  onOutput(stream: 'stdout' | 'stderr', line: string): void;
}

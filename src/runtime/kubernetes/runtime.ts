// PLACEHOLDER, replaced by the Kubernetes runtime itself when its branch is merged: the class and
// constructor the composition root builds (src/service-runtime.ts), so the service compiles and
// chooses the runtime by config meanwhile. Every call says the runtime is not in this build.
import type {
  EditorEndpoint, EditorOutput, EditorRuntime, EditorState, EditorUsage, ExtensionOutcome, HealthResult, InstalledExtensions,
  MachineMemory, PopulateOutcome, PopulateSource, RunningEditor, RuntimeEvent, RuntimeRef, StartedEditor, StartSpec,
} from '../interface.ts';
import type { KubernetesRuntimeOptions } from './options.ts';

function missing(): never {
  throw new Error('the Kubernetes runtime is not part of this build: set runtime.kind (or DEVBOX_RUNTIME) to process');
}

export class KubernetesRuntime implements EditorRuntime {
  readonly kind = 'kubernetes';
  readonly options: KubernetesRuntimeOptions;

  constructor(options: KubernetesRuntimeOptions) {
    this.options = options;
  }

  prepare(_name: string): Promise<string> { return missing(); }
  workspaceEmpty(_name: string): Promise<boolean> { return missing(); }
  populate(_name: string, _source: PopulateSource, _signal: AbortSignal): Promise<PopulateOutcome> { return missing(); }
  readSettings(_name: string): Promise<string | undefined> { return missing(); }
  writeSettings(_name: string, _text: string): Promise<void> { return missing(); }
  readAppliedSettings(_name: string): Promise<string | undefined> { return missing(); }
  writeAppliedSettings(_name: string, _text: string): Promise<void> { return missing(); }
  installedExtensions(_name: string): Promise<InstalledExtensions> { return missing(); }
  installExtension(_name: string, _id: string, _signal: AbortSignal): Promise<ExtensionOutcome> { return missing(); }
  uninstallExtension(_name: string, _id: string, _signal: AbortSignal): Promise<ExtensionOutcome> { return missing(); }
  remove(_name: string): Promise<void> { return missing(); }
  async portIsFree(_port: number): Promise<boolean> { return true; }
  start(_spec: StartSpec): Promise<StartedEditor> { return missing(); }
  stop(_name: string, _ref: RuntimeRef, _graceMs: number): Promise<boolean> { return missing(); }
  state(_name: string, _ref: RuntimeRef): EditorState { return missing(); }
  adopt(_name: string, _ref: RuntimeRef, _port?: number): { endpoint: EditorEndpoint | undefined } | undefined { return missing(); }
  list(): Promise<RunningEditor[]> { return missing(); }
  health(_endpoint: EditorEndpoint, _timeoutMs?: number): Promise<HealthResult> { return missing(); }
  waitReady(_endpoint: EditorEndpoint, _deadline: number, _cancelled: () => boolean): Promise<boolean> { return missing(); }
  memory(): MachineMemory | undefined { return undefined; }
  usage(_refs: RuntimeRef[]): Promise<Map<RuntimeRef, EditorUsage>> { return missing(); }
  logs(_name: string, _options: { signal: AbortSignal; since?: 'now' | 'start' }): AsyncIterable<EditorOutput> { return missing(); }
  onChange(_listener: (name: string) => void): void {}
  onEvent(_listener: (name: string, event: RuntimeEvent) => void): void {}
  synced(): Promise<void> { return Promise.reject(new Error('the Kubernetes runtime is not part of this build: set runtime.kind (or DEVBOX_RUNTIME) to process')); }
  dispose(): void {}
}

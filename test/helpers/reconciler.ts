// A Reconciler on parts of its own, built as the Controller builds them (the index it writes, the
// uid book, each step's memory, the runtime's news followed), for tests that drive reconcile(name)
// by hand and look at what it wrote. `runtime` is one stand-in for both halves and the health
// checks (FakeRuntime is all three).
import type { ReconcilerDeps } from '../../src/controller/context.ts';
import { ServerIdentities } from '../../src/controller/identity.ts';
import { followRuntime, reconcileContext } from '../../src/controller/parts.ts';
import { Reconciler } from '../../src/controller/reconciler.ts';
import { ServerTable } from '../../src/index/server-table.ts';
import type { EditorStorage } from '../../src/runtime/editor-storage.ts';
import type { EditorWorkload } from '../../src/runtime/editor-workload.ts';
import type { EditorHealth } from '../../src/runtime/health.ts';
import { isRunning } from '../../src/runtime/interface.ts';

export type TestDeps = Omit<ReconcilerDeps, 'storage' | 'workload' | 'health'> & { runtime: EditorStorage & EditorWorkload & EditorHealth };

/** The deps a controller is given, with the one stand-in as its storage, workload and health checks. */
export function depsOf({ runtime, ...rest }: TestDeps): ReconcilerDeps {
  // The config's resources for every editor, as the service gives them (read at each start).
  return { defaultResources: () => rest.config.runtime.kubernetes.resources, ...rest, storage: runtime, workload: runtime, health: runtime };
}

/** The index a controller writes and the uid book it answers from, as the service builds them. */
export function indexFor(deps: Pick<ReconcilerDeps, 'layout' | 'workload'>) {
  const identities = new ServerIdentities(deps.layout);
  const table = new ServerTable({ nameOfUid: (uid) => identities.nameOf(uid), alive: (name, ref) => isRunning(deps.workload.state(name, ref).state) });
  return { table, identities };
}

export function reconcilerFor(given: TestDeps) {
  const deps = depsOf(given);
  const { table, identities } = indexFor(deps);
  const parts = reconcileContext(deps, table, identities);
  followRuntime(parts);
  return { reconciler: new Reconciler(parts), table, parts, identities };
}

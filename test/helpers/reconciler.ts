// A Reconciler on parts of its own, built as the Controller builds them (the index it writes, the
// uid book, each step's memory, the runtime's news followed), for tests that drive reconcile(name)
// by hand and look at what it wrote.
import type { ReconcilerDeps } from '../../src/controller/context.ts';
import { ServerIdentities } from '../../src/controller/identity.ts';
import { followRuntime, reconcileContext } from '../../src/controller/parts.ts';
import { Reconciler } from '../../src/controller/reconciler.ts';
import { ServerTable } from '../../src/index/server-table.ts';
import { isRunning } from '../../src/runtime/interface.ts';

export function reconcilerFor(deps: ReconcilerDeps) {
  const identities = new ServerIdentities(deps.layout);
  const table = new ServerTable({ nameOfUid: (uid) => identities.nameOf(uid), alive: (name, ref) => isRunning(deps.runtime.state(name, ref).state) });
  const parts = reconcileContext(deps, table, identities);
  followRuntime(parts);
  return { reconciler: new Reconciler(parts), table, parts, identities };
}

// The controller's side of the index's commands (src/index/commands.ts): what the API and the
// proxy may ask of it, and nothing else of the Controller or the Reconciler.
import type { ServerCommands } from '../index/commands.ts';
import type { Controller } from './controller.ts';
import type { Reconciler } from './reconciler.ts';

export function controllerCommands(controller: Controller, reconciler: Reconciler): ServerCommands {
  return {
    // Someone waits on what the API and the proxy ask: ahead of background work.
    enqueue: (name) => controller.enqueue(name, 'user'),
    reconcileNow: (name, timeoutMs) => controller.reconcileNow(name, timeoutMs),
    waitFor: (name, predicate, timeoutMs) => controller.waitFor(name, predicate, timeoutMs),
    wake: (name, why) => {
      const woken = reconciler.wake(name, why);
      // Someone opened the editor and waits on the starting page.
      if (woken) controller.enqueue(name, 'user');
      return woken;
    },
    requestDeletion: (name) => reconciler.requestDeletion(name),
    recordHealth: (name, answered) => reconciler.recordHealth(name, answered),
  };
}

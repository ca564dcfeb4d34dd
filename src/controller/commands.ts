// The controller's side of the index's commands (src/index/commands.ts): what the API and the
// proxy may ask of it, and nothing else of the Controller or the Reconciler.
import type { ServerCommands } from '../index/commands.ts';
import type { Controller } from './controller.ts';
import type { Reconciler } from './reconciler.ts';

export function controllerCommands(controller: Controller, reconciler: Reconciler): ServerCommands {
  return {
    enqueue: (name) => controller.enqueue(name),
    reconcileNow: (name, timeoutMs) => controller.reconcileNow(name, timeoutMs),
    waitFor: (name, predicate, timeoutMs) => controller.waitFor(name, predicate, timeoutMs),
    wake: (name, why) => reconciler.wake(name, why),
    requestDeletion: (name) => reconciler.requestDeletion(name),
    recordHealth: (name, answered) => reconciler.recordHealth(name, answered),
  };
}

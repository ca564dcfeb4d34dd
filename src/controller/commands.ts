// The controller's side of the index's commands (src/index/commands.ts): what the API and the
// proxy may ask of it, and nothing else of the Controller or its parts.
import type { ServerCommands } from '../index/commands.ts';
import type { Controller } from './controller.ts';
import { recordHealth } from './ensure-health.ts';
import { wake } from './ensure-idle.ts';
import { requestAttach } from './ensure-lifecycle.ts';

export function controllerCommands(controller: Controller): ServerCommands {
  const parts = controller.parts;
  return {
    // Someone waits on what the API and the proxy ask: ahead of background work.
    enqueue: (name) => controller.enqueue(name, 'user'),
    reconcileNow: (name, timeoutMs) => controller.reconcileNow(name, timeoutMs),
    waitFor: (name, predicate, timeoutMs) => controller.waitFor(name, predicate, timeoutMs),
    wake: (name, why) => {
      const woken = wake(parts, name, why);
      // Someone opened the editor and waits on the starting page.
      if (woken) controller.enqueue(name, 'user');
      return woken;
    },
    // Deletes the server on its next reconcile although its file is missing or invalid and so
    // cannot carry metadata.deletionTimestamp (DELETE /servers/{id} asked for it).
    requestDeletion: (name) => void parts.presence.deletions.add(name),
    recordHealth: (name, answered) => recordHealth(parts, name, answered),
    attached: (name) => {
      requestAttach(parts, name);
      controller.enqueue(name, 'user');
    },
  };
}

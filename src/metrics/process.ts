// The Node.js process's own metrics (memory, CPU, event-loop lag, GC, handles): prom-client's
// default metrics, in a registry of this module's, made once per process. They describe the
// process, not a service, and prom-client's event-loop monitor and GC observer, once started,
// are never stopped: one set per process however many services it runs (tests run several).
// prom-client is loaded then too, not at start.
import type { Registry } from 'prom-client';

let registry: Promise<Registry> | undefined;

/** The process's registry, made and filled on first use. */
export function processRegistry(): Promise<Registry> {
  registry ??= import('prom-client').then(({ collectDefaultMetrics, Registry }) => {
    const made = new Registry();
    collectDefaultMetrics({ register: made });
    return made;
  });
  return registry;
}

// The Node.js process's own metrics (memory, CPU, event-loop lag, GC, handles): prom-client's
// default metrics, in a registry of this module's, made once per process. They describe the
// process, not a service, and prom-client's event-loop monitor and GC observer, once started,
// are never stopped: one set per process however many services it runs (tests run several).
import { collectDefaultMetrics, Registry } from 'prom-client';

let registry: Registry | undefined;

/** The process's registry, made and filled on first use. */
export function processRegistry(): Registry {
  if (!registry) {
    registry = new Registry();
    collectDefaultMetrics({ register: registry });
  }
  return registry;
}

// Used and free capacity (GET /health's `capacity`): the limits come from the service, the
// running editors and their memory from the watch stream, so the figures move with each sample.
import { useEffect, useState } from 'preact/hooks';
import type { CapacityHealth } from '../api/openapi-types.ts';
import { getHealth } from '../api/servers.ts';
import type { ServerRecord } from '../api/types.ts';
import { formatMb } from './format.ts';

/** GET /health `capacity` (the document's CapacityHealth): null limits mean "no limit". */
export type CapacityFigures = CapacityHealth;

/** The service's capacity figures, asked again whenever the number of running editors changes. */
export function useCapacity(running: number): CapacityFigures | undefined {
  const [figures, setFigures] = useState<CapacityFigures>();
  useEffect(() => {
    let current = true;
    getHealth().then((health) => {
      if (current) setFigures(health.capacity as CapacityFigures | undefined);
    }, () => undefined);
    return () => {
      current = false;
    };
  }, [running]);
  return figures;
}

/** "Capacity: 2 of 3 editors running, 96 MB of 4.8 GB memory used (4.7 GB free)", from live records. */
export function CapacitySummary({ servers }: { servers: ServerRecord[] }) {
  const running = servers.filter((s) => s.start_time !== null);
  const figures = useCapacity(running.length);
  if (!figures) return null;
  const used = running.reduce((total, s) => total + (s.memory_mb ?? 0), 0);
  const editors = figures.max_running === null ? `${running.length} editors running (no limit)` : `${running.length} of ${figures.max_running} editors running`;
  const memory = figures.memory_limit_mb === null
    ? `${formatMb(used)} memory used (no limit)`
    : `${formatMb(used)} of ${formatMb(figures.memory_limit_mb)} memory used (${formatMb(Math.max(0, figures.memory_limit_mb - used))} free)`;
  return <p class="muted summary" role="note" aria-label="Capacity">Capacity: {editors}, {memory}</p>;
}

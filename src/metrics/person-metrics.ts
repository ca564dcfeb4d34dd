// Per-person use (capacity.perPerson) for GET /metrics: gauges labelled by person, the owner of
// servers. Their cardinality is the number of people with a server (GET /health lists at most 100
// of them; these carry the same list): a person's series go when their last server does.
import type { Gauge, Registry } from 'prom-client';
import type { PersonUse } from '../index/quota-gate.ts';

type GaugeClass = typeof Gauge;

/** Registers the per-person gauges, read from `people` at each scrape. */
export function registerPersonGauges(GaugeOf: GaugeClass, registers: Registry[], people: () => PersonUse[]): void {
  const families: Array<[name: string, help: string, read: (use: PersonUse) => number]> = [
    ['devbox_person_running_editors', 'Editors of the person\'s servers running or starting (capacity.perPerson.runningEditors limits it)', (u) => u.running],
    ['devbox_person_servers', 'Servers the person owns (capacity.perPerson.servers limits it)', (u) => u.servers],
    ['devbox_person_memory_bytes', 'Resident memory of the person\'s running editors at the last sample, an unsampled one at the estimate (capacity.perPerson.memoryMb limits it)', (u) => u.memory_mb * 1024 * 1024],
  ];
  for (const [name, help, read] of families) {
    new GaugeOf({
      name, help, labelNames: ['person'], registers,
      collect() {
        this.reset();
        for (const use of people()) this.set({ person: use.person }, read(use));
      },
    });
  }
}

// The behaviour every editor runtime must show, whatever runs the editors (local processes, Pods):
// the workload's suite and the storage's, run unchanged against each runtime. A runtime's test
// file supplies a Harness (harness.ts).
import { storageConformance } from './storage-conformance.ts';
import { workloadConformance } from './workload-conformance.ts';

export { answers, logLine, type Harness, type SourceFixture } from './harness.ts';

export function runtimeConformance(label: string, setup: () => Promise<import('./harness.ts').Harness>): void {
  workloadConformance(label, setup);
  storageConformance(label, setup);
}

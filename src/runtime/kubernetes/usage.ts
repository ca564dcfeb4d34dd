// Editors' CPU and memory on a cluster: the kubelet's summary of each node they run on (through
// the API server's node proxy), the editor container's figures by Pod uid.
import type { V1Pod } from '@kubernetes/client-node';
import type { EditorUsage, RuntimeRef } from '../interface.ts';
import { messageOf, type KubeClient } from './client.ts';
import { EDITOR_CONTAINER } from './names.ts';

/** The usage of each reference whose Pod `podOf` finds running; one summary per node, each one's failure (or answer: undefined) reported. */
export async function summaryUsage(
  client: KubeClient, refs: RuntimeRef[], podOf: (ref: RuntimeRef) => V1Pod | undefined, report: (node: string, failure: string | undefined) => void,
): Promise<Map<RuntimeRef, EditorUsage>> {
  const byUid = new Map<string, RuntimeRef>();
  const nodes = new Set<string>();
  for (const ref of refs) {
    const node = podOf(ref)?.spec?.nodeName;
    if (!node) continue;
    byUid.set(String(ref.uid), ref);
    nodes.add(node);
  }
  const usage = new Map<RuntimeRef, EditorUsage>();
  for (const node of nodes) {
    const summary = await client.nodeSummary(node).catch((error) => {
      report(node, messageOf(error));
      return undefined;
    });
    if (summary) report(node, undefined);
    for (const pod of summary?.pods ?? []) {
      const ref = byUid.get(pod.podRef?.uid ?? '');
      const container = pod.containers?.find((c) => c.name === EDITOR_CONTAINER);
      if (!ref || !container?.memory?.workingSetBytes) continue;
      const memoryBytes = container.memory.workingSetBytes;
      const started = Date.parse(container.startTime ?? '');
      usage.set(ref, {
        // 10^9 nano-cores are one core, 100 %.
        cpuPercent: Math.round((container.cpu?.usageNanoCores ?? 0) / 1e5) / 100,
        memoryMb: Math.round(memoryBytes / 1048576),
        memoryBytes,
        uptime: Number.isFinite(started) ? Math.max(0, Math.round((Date.now() - started) / 1000)) : 0,
      });
    }
  }
  return usage;
}

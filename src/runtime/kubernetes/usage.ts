// Editors' CPU and memory on a cluster: the kubelet's summary of each node they run on (through
// the API server's node proxy), the editor container's figures by Pod uid. A node's summary is
// asked for at most once per SUMMARY_TTL_MS, however often usage is sampled: the kubelet's own
// figures change only at its housekeeping (every 10 s by default), and one request per node a
// sample would cost the API server more than the editors it measures.
import type { V1Pod } from '@kubernetes/client-node';
import type { EditorUsage, RuntimeRef } from '../interface.ts';
import { messageOf } from './client.ts';
import type { ClusterApi, KubeletSummary } from './cluster-api.ts';
import { EDITOR_CONTAINER } from './names.ts';

/** How long a node's summary is used before it is asked for again. */
export const SUMMARY_TTL_MS = 10_000;

/** `client.nodeSummary`, each node's answer kept for SUMMARY_TTL_MS (a failure is not kept). */
export function cachedSummaries(client: Pick<ClusterApi, 'nodeSummary'>, now = () => Date.now()): Pick<ClusterApi, 'nodeSummary'> {
  const kept = new Map<string, { at: number; summary: Promise<KubeletSummary> }>();
  return {
    nodeSummary(node) {
      const held = kept.get(node);
      if (held && now() - held.at < SUMMARY_TTL_MS) return held.summary;
      const summary = client.nodeSummary(node);
      kept.set(node, { at: now(), summary });
      summary.catch(() => kept.delete(node));
      return summary;
    },
  };
}

/** The usage of each reference whose Pod `podOf` finds running; one summary per node, each one's failure (or answer: undefined) reported. */
export async function summaryUsage(
  client: Pick<ClusterApi, 'nodeSummary'>, refs: RuntimeRef[], podOf: (ref: RuntimeRef) => V1Pod | undefined, report: (node: string, failure: string | undefined) => void,
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

/** What to do with each node's summary failures: said once while it lasts (usage is asked for at every sample), and when it is over. */
export function summaryTrouble(log: (level: 'info' | 'warn', message: string) => void): (node: string, failure: string | undefined) => void {
  const lasting = new Map<string, string>();
  return (node, failure) => {
    if (failure === undefined) {
      if (lasting.delete(node)) log('info', `the kubelet summary of ${node} answers again`);
    } else {
      if (lasting.get(node) !== failure) log('warn', `the kubelet summary of ${node}: ${failure}`);
      lasting.set(node, failure);
    }
  };
}

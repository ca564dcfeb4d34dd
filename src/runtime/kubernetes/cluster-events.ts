// Kubernetes Events about a server's objects (its Pod, StatefulSet, claim), as the runtime's
// events: the scheduler's FailedScheduling, the kubelet's Pulling/Failed/BackOff/Unhealthy, the
// volume's ProvisioningFailed. Only events that happen while the service watches are passed on.
import type { CoreV1Event } from '@kubernetes/client-node';
import type { RuntimeEvent } from '../interface.ts';
import type { ClusterApi } from './cluster-api.ts';
import { ListWatch } from './list-watch.ts';

/** The server an object of this service (its Pod, StatefulSet, claim, helper) belongs to, when known. */
export type ServerOfObject = (objectName: string) => string | undefined;

export function watchEvents(
  client: ClusterApi, serverOfObject: ServerOfObject, emit: (name: string, event: RuntimeEvent) => void, trouble: (error: Error) => void,
): () => Promise<void> {
  const since = Date.now();
  /** What was passed on, by event uid: its count then (a repeated event counts up). */
  const told = new Map<string, number>();
  const pass = (event: CoreV1Event) => {
    const uid = event.metadata?.uid ?? '';
    const count = event.count ?? 1;
    const when = Date.parse(String(event.lastTimestamp ?? event.eventTime ?? event.metadata?.creationTimestamp ?? ''));
    if ((told.get(uid) ?? 0) >= count || !(when >= since - 1000)) return;
    told.set(uid, count);
    if (told.size > 5000) told.delete(told.keys().next().value!);
    const name = serverOfObject(event.involvedObject?.name ?? '');
    // The readiness probe fails while code-server is starting, at every start: the service's own
    // health checks say when an editor does not serve, so these are not passed on.
    if (!name || (event.reason === 'Unhealthy' && /^Readiness probe failed/.test(event.message ?? ''))) return;
    emit(name, {
      level: event.type === 'Warning' ? 'WARN' : 'INFO',
      reason: event.reason ?? '',
      message: `${event.involvedObject?.kind ?? 'object'} ${event.involvedObject?.name}: ${event.message ?? ''}`.trim(),
    });
  };
  const watch = new ListWatch<CoreV1Event>(client.transport<CoreV1Event>('v1', 'Event', `/api/v1/namespaces/${client.namespace}/events`, ''), {
    replace: (items) => items.forEach(pass),
    upsert: pass,
    remove: () => undefined,
    trouble,
  }, { backoff: { initialMs: 500, maxMs: 15_000 } });
  watch.start();
  return () => watch.close();
}

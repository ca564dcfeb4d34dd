// What a Pod's status says about its editor, read as the Kubernetes runtime reads it: Pod
// statuses as the test cluster's kubelet, scheduler and node controller (Kubernetes 1.20) write them.
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { podProblem } from '../../../src/runtime/kubernetes/pod-state.ts';

const running = { running: { startedAt: new Date('2026-11-26T23:00:00Z') } };

function pod(status: V1Pod['status']): V1Pod {
  return { metadata: { name: 'devbox-alpha-0', uid: 'u1' }, spec: { nodeName: 'devbox-node', containers: [{ name: 'editor', image: 'i' }] }, status };
}

describe('podProblem', () => {
  it('says why the storage helper cannot run, from its own container: the kubelet\'s pull error', () => {
    const helper = pod({
      phase: 'Pending',
      conditions: [{ type: 'PodScheduled', status: 'True' }, { type: 'Ready', status: 'False', reason: 'ContainersNotReady' }],
      containerStatuses: [{
        name: 'storage', image: '127.0.0.1:1/nothing:1', imageID: '', ready: false, restartCount: 0,
        state: { waiting: { reason: 'ErrImagePull', message: 'rpc error: code = Unknown desc = failed to pull and unpack image "127.0.0.1:1/nothing:1"' } },
      }],
    });
    expect(podProblem(helper, 'storage')).toEqual({ reason: 'ErrImagePull', message: 'rpc error: code = Unknown desc = failed to pull and unpack image "127.0.0.1:1/nothing:1"' });
    // The editor's container is the one that matters by default: a helper's says nothing of it.
    expect(podProblem(helper)).toBeUndefined();
  });

  it('gives the scheduler\'s reason and words for a Pod not placed', () => {
    const pending = pod({ phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: '0/1 nodes are available: 1 Insufficient memory.' }] });
    expect(podProblem(pending)).toEqual({ reason: 'Unschedulable', message: '0/1 nodes are available: 1 Insufficient memory.' });
  });

  it('says nothing while a container merely starts or its readiness probe has not answered yet', () => {
    expect(podProblem(pod({
      phase: 'Pending',
      conditions: [{ type: 'PodScheduled', status: 'True' }, { type: 'Ready', status: 'False', reason: 'ContainersNotReady', message: 'containers with unready status: [editor]' }],
      containerStatuses: [{ name: 'editor', image: 'i', imageID: '', ready: false, restartCount: 0, state: { waiting: { reason: 'ContainerCreating' } } }],
    }))).toBeUndefined();
    expect(podProblem(pod({
      phase: 'Running',
      conditions: [{ type: 'Ready', status: 'False', reason: 'ContainersNotReady', message: 'containers with unready status: [editor]' }],
      containerStatuses: [{ name: 'editor', image: 'i', imageID: '', ready: false, restartCount: 0, state: running }],
    }))).toBeUndefined();
  });
});

describe('podProblem of a Pod on a node that stopped reporting', () => {
  // As the node controller leaves it (Kubernetes 1.20, MarkPodsNotReady): the Ready condition
  // copied from the kubelet's (which has no reason) with its status False; the containers as the
  // kubelet last reported them, running and ready.
  const lost = pod({
    phase: 'Running',
    conditions: [
      { type: 'Initialized', status: 'True' },
      { type: 'Ready', status: 'False', lastTransitionTime: new Date('2026-11-26T23:10:00Z') },
      { type: 'ContainersReady', status: 'True' },
      { type: 'PodScheduled', status: 'True' },
    ],
    containerStatuses: [{ name: 'editor', image: 'i', imageID: '', ready: true, restartCount: 0, state: running }],
  });

  it('is NodeNotReady, naming the node', () => {
    expect(podProblem(lost)).toEqual({ reason: 'NodeNotReady', message: expect.stringMatching(/^node devbox-node is not ready: /) });
  });

  it('is the reason the Ready condition gives, when it gives one', () => {
    const said = structuredClone(lost);
    said.status!.conditions![1] = { type: 'Ready', status: 'False', reason: 'NodeNotReady', message: 'Node is not ready' };
    expect(podProblem(said)).toEqual({ reason: 'NodeNotReady', message: 'Node is not ready' });
  });

  it('is over once the kubelet reports again (not ready until its probe answers, then ready)', () => {
    const back = structuredClone(lost);
    back.status!.conditions![1] = { type: 'Ready', status: 'False', reason: 'ContainersNotReady', message: 'containers with unready status: [editor]' };
    back.status!.containerStatuses![0].ready = false;
    expect(podProblem(back)).toBeUndefined();
    back.status!.conditions![1] = { type: 'Ready', status: 'True' };
    back.status!.containerStatuses![0].ready = true;
    expect(podProblem(back)).toBeUndefined();
  });
});

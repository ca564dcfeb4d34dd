// The editor Pod's init container: what its report in the Pod's status says of the volume (read
// instead of an exec), and its pull error said as the editor's problem. Statuses as the kubelet
// writes them (Kubernetes 1.20).
import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { podProblem } from '../../../src/runtime/kubernetes/pod-state.ts';
import { preparedReport } from '../../../src/runtime/kubernetes/prepare.ts';

function pod(prepare: Partial<V1ContainerStatus>): V1Pod {
  return {
    metadata: { name: 'devbox-alpha-0', uid: 'u1' },
    status: { phase: 'Running', initContainerStatuses: [{ name: 'prepare', image: 'i', imageID: '', ready: true, restartCount: 0, ...prepare }] },
  };
}
const ended = (message: string, exitCode = 0) => pod({ state: { terminated: { exitCode, message, reason: 'Completed' } } });

describe('the prepare report', () => {
  it('reads the workspace and the extensions that extensions.json lists, platform suffixes dropped', () => {
    const report = preparedReport(ended('#workspace used\n#list\nacme.tool-1.0.0\nms-python.python-2024.1.0-linux-x64\n#end\n'));
    expect(report).toEqual({ workspaceEmpty: false, extensions: new Map([['acme.tool', '1.0.0'], ['ms-python.python', '2024.1.0']]) });
  });

  it('reads an empty volume: an empty workspace and no extensions', () => {
    expect(preparedReport(ended('#workspace empty\n#folders\n#end\n'))).toEqual({ workspaceEmpty: true, extensions: new Map() });
  });

  it('knows nothing of the extensions from a list without folder names, and nothing at all from a cut or failed report', () => {
    expect(preparedReport(ended('#workspace empty\n#unknown\n#end\n'))).toEqual({ workspaceEmpty: true, extensions: undefined });
    expect(preparedReport(ended('#workspace used\n#list\nacme.tool-1.0.0\nms-py'))).toBeUndefined();
    expect(preparedReport(ended('#workspace used\n#folders\n#end\n', 1))).toBeUndefined();
    expect(preparedReport(pod({ state: { running: {} } }))).toBeUndefined();
  });
});

describe('a Pod whose volume is being prepared', () => {
  it('says the init container\'s pull error as the editor\'s problem', () => {
    const stuck = pod({ state: { waiting: { reason: 'ImagePullBackOff', message: 'Back-off pulling image "127.0.0.1:1/nothing:1"' } } });
    stuck.status!.phase = 'Pending';
    stuck.status!.containerStatuses = [{ name: 'editor', image: 'i', imageID: '', ready: false, restartCount: 0, state: { waiting: { reason: 'PodInitializing' } } }];
    expect(podProblem(stuck)).toEqual({ reason: 'ImagePullBackOff', message: 'Back-off pulling image "127.0.0.1:1/nothing:1"' });
  });
});

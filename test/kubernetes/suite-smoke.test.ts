// The Kubernetes suite's first check: the cluster it runs against has a node that takes pods.
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { NO_CLUSTER, testCluster } from '../helpers/cluster.ts';

const cluster = await testCluster();

describe.skipIf(!cluster)(cluster ? 'the test cluster' : `the test cluster (${NO_CLUSTER})`, () => {
  it('has a node that is Ready', async () => {
    const config = new KubeConfig();
    config.loadFromFile(cluster!.kubeconfig);
    const { items } = await config.makeApiClient(CoreV1Api).listNode();
    const readiness = items.map((node) => `${node.metadata?.name} Ready=${node.status?.conditions?.find((c) => c.type === 'Ready')?.status}`);
    expect(readiness).toContain('devbox-node Ready=True');   // the node scripts/test-cluster.sh starts
  });
});

// Runs once before the Kubernetes suite (vitest's project "kubernetes"): one line in the test
// output says whether the suite runs against the test cluster, or why its files skip.
import { NO_CLUSTER, testCluster } from '../helpers/cluster.ts';

export default async function announceTestCluster(): Promise<void> {
  const cluster = await testCluster();
  if (cluster) console.log(`Kubernetes suite: running against ${cluster.server} (${cluster.runDir})`);
  else console.log(`Kubernetes suite: skipped — ${NO_CLUSTER}`);
}

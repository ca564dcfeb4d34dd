// Runs once before the Kubernetes suite (vitest's project "kubernetes"): one line in the test
// output says whether the suite runs against the test cluster, or why its files skip.
// DEVBOX_REQUIRE_TEST_CLUSTER=1 (set by `npm run test:kubernetes`) makes a missing cluster an error.
import { NO_CLUSTER, RUN_DIR, testCluster } from '../helpers/cluster.ts';

export default async function announceTestCluster(): Promise<void> {
  const cluster = await testCluster();
  if (cluster) {
    console.log(`Kubernetes suite: running against ${cluster.server} (${cluster.runDir})`);
  } else if (process.env.DEVBOX_REQUIRE_TEST_CLUSTER === '1') {
    throw new Error(`Kubernetes suite: DEVBOX_REQUIRE_TEST_CLUSTER=1 requires a test cluster, and none answers in ${RUN_DIR} ` +
      `(scripts/test-cluster.sh status says what runs; the daemons' logs are in ${RUN_DIR}/logs)`);
  } else {
    console.log(`Kubernetes suite: skipped — ${NO_CLUSTER}`);
  }
}

import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    projects: [
      {
        extends: true,
        test: {
          name: 'main',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, 'test/kubernetes/**'],
          // Integration tests start real processes on a 2-core machine: keep parallelism modest.
          maxWorkers: 2,
          fileParallelism: true,
        },
      },
      {
        extends: true,
        test: {
          // Against the real test cluster (docs/kubernetes-test-cluster.md). Its files share one
          // node, so they run one at a time, after the project "main" (vitest runs a project
          // without file parallelism in a group of its own).
          name: 'kubernetes',
          include: ['test/kubernetes/**/*.test.ts'],
          fileParallelism: false,
          globalSetup: ['test/kubernetes/global-setup.ts'],
        },
      },
    ],
  },
});

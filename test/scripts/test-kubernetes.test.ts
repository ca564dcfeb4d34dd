// scripts/test-kubernetes.sh (`npm run test:kubernetes`) against a fake scripts/test-cluster.sh
// and a fake vitest that record each call: the real cluster takes minutes to build and start,
// and one is shared by everyone testing on the machine.
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const SCRIPT = new URL('../../scripts/test-kubernetes.sh', import.meta.url).pathname;

/** The cluster's script: `status` says ready when the run folder holds `ready`; `up` makes it. */
const FAKE_CLUSTER = (record: string) => `#!/usr/bin/env bash
run_dir=\${DEVBOX_TEST_CLUSTER_DIR:?}
echo "$1" >>${JSON.stringify(record)}
case "$1" in
  status) [ -d "$run_dir" ] || exit 3; [ -e "$run_dir/ready" ] && echo "apiserver                ready" || echo "apiserver                not ready" ;;
  build) [ "$FAKE_FAILS" = build ] && exit 1 ;;
  up) mkdir -p "$run_dir"; [ "$FAKE_FAILS" = up ] && exit 1; touch "$run_dir/ready"; echo "$run_dir/kubeconfig" ;;
  down) rm -rf "$run_dir" ;;
esac
exit 0
`;

/** vitest: records its arguments and whether the cluster was required; exits with FAKE_VITEST_STATUS. */
const FAKE_VITEST = (record: string) => `#!/usr/bin/env bash
echo "vitest $* require=$DEVBOX_REQUIRE_TEST_CLUSTER" >>${JSON.stringify(record)}
exit "\${FAKE_VITEST_STATUS:-0}"
`;

/** id: the script runs as root only; the fake says who runs it. */
const FAKE_ID = `#!/usr/bin/env bash
echo "\${FAKE_UID:-0}"
`;

let root: string;
let runDir: string;
let record: string;

beforeEach(async () => {
  root = await fs.mkdtemp(join(tmpdir(), 'devbox-test-kubernetes-'));
  runDir = join(root, 'cluster');
  record = join(root, 'calls');
  await fs.mkdir(join(root, 'scripts'));
  await fs.mkdir(join(root, 'node_modules', '.bin'), { recursive: true });
  await fs.copyFile(SCRIPT, join(root, 'scripts', 'test-kubernetes.sh'));
  await fs.writeFile(join(root, 'scripts', 'test-cluster.sh'), FAKE_CLUSTER(record), { mode: 0o755 });
  // The script puts node_modules/.bin first on PATH, as npm run does: the fakes sit there.
  await fs.writeFile(join(root, 'node_modules', '.bin', 'vitest'), FAKE_VITEST(record), { mode: 0o755 });
  await fs.writeFile(join(root, 'node_modules', '.bin', 'id'), FAKE_ID, { mode: 0o755 });
});

afterEach(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

function run(args: string[] = [], env: Record<string, string> = {}): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn('bash', [join(root, 'scripts', 'test-kubernetes.sh'), ...args], {
      env: { PATH: process.env.PATH, DEVBOX_TEST_CLUSTER_DIR: runDir, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('close', (code) => resolve({ code, output }));
  });
}

async function calls(): Promise<string[]> {
  return (await fs.readFile(record, 'utf8').catch(() => '')).split('\n').filter(Boolean);
}

describe('npm run test:kubernetes', () => {
  it('reuses a cluster that answers, runs only the Kubernetes suite, and leaves the cluster running', async () => {
    await fs.mkdir(runDir);
    await fs.writeFile(join(runDir, 'ready'), '');
    const { code, output } = await run();
    expect(code, output).toBe(0);
    expect(await calls()).toEqual(['status', 'vitest run --project kubernetes require=1']);
    expect(output).toContain('left running');
  });

  it('builds and starts a cluster when none runs, and stops it afterwards, also when a test fails', async () => {
    const { code, output } = await run(['test/kubernetes/one.test.ts'], { FAKE_VITEST_STATUS: '1' });
    expect(code, output).toBe(1);
    expect(await calls()).toEqual(['status', 'build', 'up', 'vitest run --project kubernetes test/kubernetes/one.test.ts require=1', 'down']);
    expect(output).toContain('stopping the test cluster this run started');
  });

  it('leaves the cluster it started running with --keep', async () => {
    const { code, output } = await run(['--keep']);
    expect(code, output).toBe(0);
    expect(await calls()).toEqual(['status', 'build', 'up', 'vitest run --project kubernetes require=1']);
    expect(output).toContain('left the test cluster running (--keep)');
  });

  it('stops a half-started cluster when up fails, even with --keep', async () => {
    const { code, output } = await run(['--keep'], { FAKE_FAILS: 'up' });
    expect(code, output).not.toBe(0);
    expect(await calls()).toEqual(['status', 'build', 'up', 'down']);
  });

  it('neither starts nor stops anything when the build fails', async () => {
    const { code, output } = await run([], { FAKE_FAILS: 'build' });
    expect(code, output).not.toBe(0);
    expect(await calls()).toEqual(['status', 'build']);
  });

  it('leaves alone a run folder whose cluster does not answer, and says how to clear it', async () => {
    await fs.mkdir(runDir);
    const { code, output } = await run();
    expect(code, output).toBe(1);
    expect(await calls()).toEqual(['status', 'status']);
    expect(output).toContain('scripts/test-cluster.sh down');
  });

  it('says that it needs root, and touches nothing, when run as another user', async () => {
    const { code, output } = await run([], { FAKE_UID: '1000' });
    expect(code, output).toBe(1);
    expect(output).toContain('needs root');
    expect(await calls()).toEqual([]);
  });
});

// Leader election against the real API server: two contenders for the controller's Lease, each a
// process of its own (test/fixtures/lease-contender.ts, the module main.ts uses, with the plan's
// timings: lease 15 s, renew every 2 s, deadline 10 s). Exactly one leads; the other waits; after
// a SIGKILL of the leader the other takes the Lease once it has run out.
import { spawn, type ChildProcess } from 'node:child_process';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getObject, NO_CLUSTER, testCluster } from '../helpers/cluster.ts';
import { testNamespace } from '../helpers/kube-runtime.ts';
import { eventually } from '../helpers/wait.ts';

const cluster = await testCluster();
if (!cluster) console.log(NO_CLUSTER);

const ROOT = resolve(import.meta.dirname, '..', '..');
const NODE = join(ROOT, 'node_modules', '.bin', 'node');
const LEASE_MS = 15_000;
const RETRY_MS = 2_000;

interface Contender {
  child: ChildProcess;
  output: string[];
  /** When it said it leads (its own clock, ms). */
  ledAt(): number | undefined;
}

const contenders: Contender[] = [];
let namespace: { name: string; remove(): Promise<void> };

function contend(identity: string): Contender {
  const child = spawn(NODE, [join(ROOT, 'test/fixtures/lease-contender.ts'), cluster!.kubeconfig, namespace.name, identity], {
    cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_OPTIONS: '' },
  });
  const output: string[] = [];
  child.stdout!.setEncoding('utf8').on('data', (text: string) => output.push(...text.split('\n').filter(Boolean)));
  child.stderr!.setEncoding('utf8').on('data', (text: string) => output.push(text));
  const contender = {
    child,
    output,
    ledAt: () => output.map((line) => (line.startsWith('{') ? JSON.parse(line) : {})).find((e) => e.event === 'leading')?.at,
  };
  contenders.push(contender);
  return contender;
}

const lease = () => getObject(cluster!, ['lease', 'devbox-controller', '-n', namespace.name]);

beforeAll(async () => {
  if (cluster) namespace = await testNamespace(cluster, 'devbox-lease');
});
afterAll(async () => {
  for (const { child } of contenders) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await namespace?.remove();
});

describe.skipIf(!cluster)(cluster ? 'leader election on the test cluster' : `leader election (${NO_CLUSTER})`, () => {
  it('gives the Lease to exactly one of two processes, and to the other once the leader is killed and its lease has run out', { timeout: 90_000 }, async () => {
    const a = contend('contender-a');
    await eventually(() => a.ledAt(), 20_000, 100);
    expect((await lease())?.spec.holderIdentity).toBe('contender-a');

    const b = contend('contender-b');
    await eventually(() => b.output.some((line) => line.includes('contender-a leads; contender-b waits as a standby')), 20_000, 100);
    // Several renewals later, still one leader: a renews, b keeps waiting.
    const before = (await lease())!.spec.renewTime;
    await new Promise((r) => setTimeout(r, 3 * RETRY_MS));
    const held = (await lease())!;
    expect(held.spec.holderIdentity).toBe('contender-a');
    expect(held.spec.renewTime).not.toBe(before);
    expect(b.ledAt()).toBeUndefined();

    // The leader dies without a word: no release, its Lease just stops being renewed.
    a.child.kill('SIGKILL');
    const killedAt = Date.now();
    const takenAt = await eventually(() => b.ledAt(), LEASE_MS + 4 * RETRY_MS, 100);
    const after = (await lease())!.spec;
    expect(after).toMatchObject({ holderIdentity: 'contender-b', leaseTransitions: 1, leaseDurationSeconds: 15 });
    // b saw a's last renewal at most one retry period after it was written, and takes the Lease at
    // its first attempt after 15 s without a change: within the lease and two retry periods of the kill.
    const waited = takenAt - killedAt;
    expect(waited).toBeGreaterThan(LEASE_MS - 2 * RETRY_MS);
    expect(waited).toBeLessThanOrEqual(LEASE_MS + 2 * RETRY_MS);
    console.log(`contender-b took the Lease ${(waited / 1000).toFixed(1)} s after contender-a was killed`);
  });
});

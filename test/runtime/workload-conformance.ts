// The behaviour every workload (the half of a runtime that runs the editors: local processes,
// Pods) must show: one suite, run unchanged against each runtime's workload through its Harness.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { httpHealth } from '../../src/runtime/health.ts';
import { sameRef, type StartedEditor } from '../../src/runtime/interface.ts';
import { eventually } from '../helpers/wait.ts';
import { answers, editorsOf, logLine, nextChange, startReady, type Harness } from './harness.ts';

export function workloadConformance(label: string, setup: () => Promise<Harness>): void {
  describe(`${label}: workload conformance`, () => {
    let h: Harness;

    beforeEach(async () => {
      h = await setup();
    });
    afterEach(async () => {
      await h?.cleanup();
    });

    it('starts an editor that answers at its endpoint, and stops it leaving nothing running', async () => {
      const started = await h.runtime.workload.start({ name: 'alpha', port: await h.port() });
      expect(['starting', 'running']).toContain(h.runtime.workload.state('alpha', started.ref).state);
      expect(JSON.parse(JSON.stringify(started.ref)), 'the reference is serialisable').toEqual(started.ref);
      expect(await httpHealth.waitReady(started.endpoint, Date.now() + h.readyTimeoutMs, () => false)).toBe(true);
      expect(await answers(started.endpoint)).toBe(true);
      await eventually(() => h.runtime.workload.state('alpha', started.ref).state === 'running');
      expect(h.runtime.workload.state('alpha', started.ref)).toEqual({ state: 'running', endpoint: started.endpoint });
      expect(await h.running(started.ref)).toBe(true);
      expect((await editorsOf(h.runtime, 'alpha')).map((e) => e.ref)).toEqual([started.ref]);

      expect(await h.runtime.workload.stop('alpha', started.ref, 2000)).toBe(true);
      await eventually(async () => !(await h.running(started.ref)));
      expect(await answers(started.endpoint)).toBe(false);
      await eventually(() => ['exited', 'gone'].includes(h.runtime.workload.state('alpha', started.ref).state));
      expect(await editorsOf(h.runtime, 'alpha')).toEqual([]);
    });

    it('adopts a running editor after a controller restart, without a second one', async () => {
      const started = await startReady(h, 'alpha');
      const runtime = await h.restart();
      expect(await h.running(started.ref), 'the editor outlives the runtime that started it').toBe(true);

      const listed = await editorsOf(runtime, 'alpha');
      expect(listed).toHaveLength(1);
      expect(sameRef(listed[0].ref, started.ref)).toBe(true);
      expect(runtime.workload.adopt('beta', started.ref), "another server's name adopts nothing").toBeUndefined();
      expect(runtime.workload.adopt('alpha', started.ref)).toEqual({ endpoint: started.endpoint });
      expect(runtime.workload.state('alpha', started.ref)).toEqual({ state: 'running', endpoint: started.endpoint });
      expect(await answers(started.endpoint)).toBe(true);
      expect(await editorsOf(runtime, 'alpha')).toHaveLength(1);

      expect(await runtime.workload.stop('alpha', started.ref, 2000)).toBe(true);
      await eventually(async () => !(await h.running(started.ref)));
      expect(await editorsOf(runtime, 'alpha')).toEqual([]);
    });

    it("never stops a stranger, or another server's editor, in a server's name", async () => {
      const alpha = await startReady(h, 'alpha');
      const stranger = await h.stranger();
      const forged = { kind: 'no-such-runtime', id: 'x' };
      for (const when of ['in the run that started it', 'after a restart']) {
        const runtime = when === 'after a restart' ? await h.restart() : h.runtime;
        expect(runtime.workload.state('alpha', stranger), when).toEqual({ state: 'foreign' });
        expect(runtime.workload.state('beta', alpha.ref), when).toEqual({ state: 'foreign' });
        expect(runtime.workload.state('alpha', forged), when).toEqual({ state: 'foreign' });
        expect(runtime.workload.adopt('alpha', stranger), when).toBeUndefined();
        expect(await runtime.workload.stop('alpha', stranger, 500), when).toBe(false);
        expect(await runtime.workload.stop('beta', alpha.ref, 500), when).toBe(false);
        expect(await runtime.workload.stop('alpha', forged, 500), when).toBe(false);
        expect(await h.running(stranger), when).toBe(true);
        expect(await h.running(alpha.ref), when).toBe(true);
        expect(await answers(alpha.endpoint), when).toBe(true);
      }
    });

    it('sees an editor killed from outside and reports its name and the signal', async () => {
      const started = await startReady(h, 'alpha');
      const changed = nextChange(h.runtime, 'alpha');
      await h.kill(started.ref);
      expect(await changed).toEqual(['alpha']);
      const state = await eventually(() => {
        const s = h.runtime.workload.state('alpha', started.ref);
        return s.state === 'exited' && s.exit !== undefined && s;
      });
      expect(state).toMatchObject({ state: 'exited', exit: { signal: h.killSignal } });
      await eventually(async () => !(await h.running(started.ref)));
    });

    it('reports an editor that exits with code 1 at its start as exited with that code, and streams what it said', async () => {
      const port = h.exitsAtStartPort;
      const started = await h.runtime.workload.start({ name: 'alpha', port });
      const state = await eventually(() => {
        const s = h.runtime.workload.state('alpha', started.ref);
        return s.state === 'exited' && s.exit !== undefined && s;
      }, h.readyTimeoutMs);
      expect(state).toMatchObject({ state: 'exited', exit: { code: 1, signal: null } });
      expect(await logLine(h.runtime, 'alpha', 'start', /cannot start/)).toBe(`[stub] cannot start on port ${port}: exiting with code 1 on purpose`);
      await eventually(async () => !(await h.running(started.ref)));
      expect(await editorsOf(h.runtime, 'alpha')).toEqual([]);
      expect(h.runtime.workload.adopt('alpha', started.ref), 'an editor that ended is not adopted').toBeUndefined();
    });

    it('sees an adopted editor killed from outside', async () => {
      const started = await startReady(h, 'alpha');
      const runtime = await h.restart();
      expect(runtime.workload.adopt('alpha', started.ref)).toBeDefined();
      const changed = nextChange(runtime, 'alpha');
      await h.kill(started.ref);
      expect(await changed).toEqual(['alpha']);
      expect(runtime.workload.state('alpha', started.ref).state).toBe('exited');
    });

    it("reports a running editor's CPU and memory, and none once it is stopped", async () => {
      const started = await startReady(h, 'alpha');
      const usage = await eventually(async () => (await h.runtime.workload.usage([started.ref])).get(started.ref));
      expect(usage.memoryMb).toBeGreaterThan(0);
      expect(Number.isFinite(usage.cpuPercent)).toBe(true);
      await h.runtime.workload.stop('alpha', started.ref, 2000);
      await eventually(async () => !(await h.runtime.workload.usage([started.ref])).has(started.ref));
    });

    it("streams the editor's output: what it printed since start, and what it prints next", async () => {
      const first = await startReady(h, 'alpha');
      expect(await logLine(h.runtime, 'alpha', 'start', /HTTP server listening on/)).toMatch(String(first.endpoint.port));
      await h.runtime.workload.stop('alpha', first.ref, 2000);

      // Opened before the next start: only that start's output is new.
      let second: StartedEditor | undefined;
      const port = await h.port();
      const line = await logLine(h.runtime, 'alpha', 'now', /HTTP server listening on/, async () => {
        second = await h.runtime.workload.start({ name: 'alpha', port });
      });
      expect(line).toMatch(String(port));
      await h.runtime.workload.stop('alpha', second!.ref, 2000);
    });

  });
}

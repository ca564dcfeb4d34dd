// Asks an editor's GET /healthz, the way code-server reports it is up.
import { request } from '../core/http.ts';
import type { EditorEndpoint } from './interface.ts';
import { EDITOR_HOST } from './port-probe.ts';

/** An editor's endpoint, or a bare port for an editor this machine's process runtime runs (doctor, tests). */
export type HealthTarget = EditorEndpoint | number;

const endpointOf = (target: HealthTarget): EditorEndpoint => (typeof target === 'number' ? { host: EDITOR_HOST, port: target } : target);

export interface HealthResult {
  ok: boolean;
  /** code-server answers `alive`, or `expired` while no browser is attached. */
  state?: string;
  /** When code-server's heartbeat last beat (ms since the epoch): a request or an open connection reached it. Absent while it never has. */
  lastHeartbeat?: number;
  error?: string;
}

// One question decides a verdict (refresh, adoption), so it gets more time than a repeated probe would.
export function checkHealth(target: HealthTarget, timeoutMs = 3000): Promise<HealthResult> {
  const { host, port } = endpointOf(target);
  return new Promise((resolve) => {
    const req = request({ host, port, path: '/healthz', method: 'GET', timeout: timeoutMs, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (body.length < 4096) body += chunk;
      });
      res.on('end', () => {
        if (res.statusCode !== 200) return resolve({ ok: false, error: `HTTP ${res.statusCode}` });
        let state: string | undefined;
        let lastHeartbeat: number | undefined;
        try {
          const answer = JSON.parse(body);
          state = answer.status;
          // 0 until anything but /healthz reached it; never more than now (it is the editor's word).
          if (Number.isFinite(answer.lastHeartbeat) && answer.lastHeartbeat > 0) lastHeartbeat = Math.min(answer.lastHeartbeat, Date.now());
        } catch {
          // A 200 without JSON still means the editor is serving.
        }
        resolve({ ok: true, state, ...(lastHeartbeat !== undefined ? { lastHeartbeat } : {}) });
      });
      res.on('error', (error) => resolve({ ok: false, error: error.message }));
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', (error: NodeJS.ErrnoException) => resolve({ ok: false, error: error.code ?? error.message }));
    req.end();
  });
}

/** The wait between /healthz questions: `firstMs` for `steadyForMs`, then growing by `factor` up to `maxMs`. */
export interface ProbeBackoff {
  firstMs: number;
  steadyForMs: number;
  factor: number;
  maxMs: number;
}

// Editors come up within a second (code-server in about 0.4 s): asked every 10 ms until then,
// so a start loses at most 10 ms to the wait. After that, a slow or stuck editor is asked less
// and less often, up to once a second: about 250 questions in 120 s instead of 11,000.
export const HEALTH_BACKOFF: ProbeBackoff = { firstMs: 10, steadyForMs: 1000, factor: 1.2, maxMs: 1000 };

/** Polls /healthz until it answers 200 or the deadline passes; `cancelled` stops it early. */
export async function waitHealthy(
  target: HealthTarget,
  deadline: number,
  cancelled: () => boolean,
  backoff: ProbeBackoff = HEALTH_BACKOFF,
): Promise<boolean> {
  const started = Date.now();
  let waitMs = backoff.firstMs;
  while (Date.now() < deadline && !cancelled()) {
    if ((await checkHealth(target, 1000)).ok) return true;
    await new Promise((r) => setTimeout(r, Math.min(waitMs, Math.max(0, deadline - Date.now()))));
    if (Date.now() - started >= backoff.steadyForMs) waitMs = Math.min(backoff.maxMs, waitMs * backoff.factor);
  }
  return false;
}

/**
 * How the controller asks an editor whether it serves, whatever runs it (a process, a Pod): once
 * (`health`, within timeoutMs, 3 s unless given), or until it answers, the deadline passes or
 * `cancelled` says stop (`waitReady`). Both ask code-server's /healthz at the editor's endpoint.
 */
export interface EditorHealth {
  health(endpoint: EditorEndpoint, timeoutMs?: number): Promise<HealthResult>;
  waitReady(endpoint: EditorEndpoint, deadline: number, cancelled: () => boolean): Promise<boolean>;
}

/** EditorHealth over HTTP: the one every runtime's editors are asked through. */
export const httpHealth: EditorHealth = {
  health: (endpoint, timeoutMs) => checkHealth(endpoint, timeoutMs),
  waitReady: (endpoint, deadline, cancelled) => waitHealthy(endpoint, deadline, cancelled),
};
